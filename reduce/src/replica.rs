//! Replicas of original data on a host's disk: one file per (holder,
//! owner, reduction) under a per-job directory, mode 0600, removed when
//! the reduction ends.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::message::Key;
use crate::Error;

/// Where this job's replicas live: `ONESIDED_REDUCE_DIR`, else the
/// system's temporary directory, then a directory named after the job.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// The environment variable naming the replicas' base directory.
pub const DIR_VAR: &str = "ONESIDED_REDUCE_DIR";

impl Store {
    /// The store of job `job` (its PMI name), its directory made (mode
    /// 0700) if need be.
    ///
    /// # Errors
    /// [`Error::Replica`] when the directory cannot be made.
    pub fn new(job: &str) -> Result<Store, Error> {
        let base = std::env::var_os(DIR_VAR)
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let name: String = (job.chars())
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        let dir = base.join(format!("onesided-reduce-{name}"));
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|source| Error::Replica {
                path: dir.display().to_string(),
                source,
            })?;
        Ok(Store { dir })
    }

    /// Its directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn path(&self, holder: u32, owner: u32, key: Key) -> PathBuf {
        (self.dir).join(format!("{}-{}-h{holder}-o{owner}", key.id, key.round))
    }

    /// Writes `owner`'s original, kept by `holder` (into the host's
    /// page cache: it outlives the process, [`Store::sync`] makes it
    /// outlive the host). The file appears whole (written under another
    /// name, then renamed) or not at all.
    ///
    /// # Errors
    /// [`Error::Replica`] naming the file (a full or unwritable disk).
    pub fn write(&self, holder: u32, owner: u32, key: Key, bytes: &[u8]) -> Result<(), Error> {
        let path = self.path(holder, owner, key);
        let part = path.with_extension("part");
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&part)?;
            f.write_all(bytes)?;
            fs::rename(&part, &path)
        })();
        written.map_err(|source| {
            let _ = fs::remove_file(&part);
            Error::Replica {
                path: path.display().to_string(),
                source,
            }
        })
    }

    /// Syncs `owner`'s original, kept by `holder`, to the disk.
    ///
    /// # Errors
    /// [`Error::Replica`] naming the file (gone, or the disk failed).
    pub fn sync(&self, holder: u32, owner: u32, key: Key) -> Result<(), Error> {
        let path = self.path(holder, owner, key);
        (fs::File::open(&path).and_then(|f| f.sync_data())).map_err(|source| Error::Replica {
            path: path.display().to_string(),
            source,
        })
    }

    /// Reads `owner`'s original, kept by `holder`, into `into` (its
    /// whole length).
    ///
    /// # Errors
    /// [`Error::Replica`] naming the file: missing, shorter or longer.
    pub fn read(&self, holder: u32, owner: u32, key: Key, into: &mut [u8]) -> Result<(), Error> {
        let path = self.path(holder, owner, key);
        let read = (|| {
            let mut f = fs::File::open(&path)?;
            f.read_exact(into)?;
            match f.read(&mut [0u8; 1])? {
                0 => Ok(()),
                _ => Err(std::io::Error::other("longer than the reduction's data")),
            }
        })();
        read.map_err(|source| Error::Replica {
            path: path.display().to_string(),
            source,
        })
    }

    /// Removes the job's directory once no replica is left in it (the
    /// last of the job's processes on this host to close does).
    pub fn close(&self) {
        let _ = fs::remove_dir(&self.dir);
    }

    /// Removes every file of reduction `key` (it ended).
    pub fn remove_all(&self, key: Key) {
        self.remove_matching(&format!("{}-{}-h", key.id, key.round));
    }

    fn remove_matching(&self, prefix: &str) {
        for f in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            if f.file_name().to_string_lossy().starts_with(prefix) {
                let _ = fs::remove_file(f.path());
            }
        }
    }

    /// Removes `owner`'s replica kept by `holder`, if there is one.
    pub fn remove(&self, holder: u32, owner: u32, key: Key) {
        let _ = fs::remove_file(self.path(holder, owner, key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replicas_are_private_exact_and_removed() {
        let base =
            std::env::temp_dir().join(format!("onesided-replica-test-{}", std::process::id()));
        std::env::set_var(DIR_VAR, &base);
        let store = Store::new("kvs/1 x").expect("store");
        assert!(store.dir().ends_with("onesided-reduce-kvs_1_x"));
        let key = Key { id: 3, round: 1 };
        store.write(1, 0, key, b"original").expect("write");
        store.sync(1, 0, key).expect("sync");
        let file = store.path(1, 0, key);
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut back = [0u8; 8];
        store.read(1, 0, key, &mut back).expect("read");
        assert_eq!(&back, b"original");
        let mut short = [0u8; 4];
        assert!(
            store.read(1, 0, key, &mut short).is_err(),
            "longer than asked"
        );
        let mut long = [0u8; 9];
        let err = store.read(1, 0, key, &mut long).unwrap_err().to_string();
        assert!(err.contains("-h1-o0"), "{err}");
        store.remove(1, 0, key);
        assert!(!file.exists());
        store.write(2, 0, key, b"a").unwrap();
        store.write(3, 1, key, b"c").unwrap();
        store.write(3, 2, Key { id: 3, round: 2 }, b"d").unwrap();
        store.remove_all(key);
        assert_eq!(
            fs::read_dir(store.dir()).unwrap().count(),
            1,
            "another round's stays"
        );
        store.remove(3, 2, Key { id: 3, round: 2 });
        // An unwritable place: one clear error naming the file.
        let ro = Store {
            dir: PathBuf::from("/proc/onesided-no-such-dir"),
        };
        assert!(ro
            .write(0, 0, key, b"x")
            .unwrap_err()
            .to_string()
            .contains("/proc/"));
        fs::remove_dir_all(&base).unwrap();
        std::env::remove_var(DIR_VAR);
    }
}
