//! Info objects (`MPI_Info`): ordered key-value pairs of strings.
//! onesided reads none of them yet; a program's hints are kept and
//! handed back as the standard says. `MPI_INFO_ENV` is empty.

use std::ffi::{c_char, c_int, CStr};

use crate::abi::{self, err, Handle};
use crate::errors::{finish, Fail};
use crate::{mpi, ptr, runtime};

/// `MPI_MAX_INFO_KEY` and `MPI_MAX_INFO_VAL`: the longest key and value
/// (the terminating NUL not counted).
const MAX_KEY: usize = 255;
const MAX_VALUE: usize = 1024;

/// The pairs of an info object, in the order they were first set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Info {
    pairs: Vec<(String, String)>,
}

impl Info {
    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// `MPI_ERR_INFO_KEY` for an empty or too long key,
    /// `MPI_ERR_INFO_VALUE` for a too long value.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<(), Fail> {
        check_key(key)?;
        if value.len() > MAX_VALUE {
            return Err(Fail::new(
                err::INFO_VALUE,
                format!("a value of {} bytes", value.len()),
            ));
        }
        match self.pairs.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value.to_owned(),
            None => self.pairs.push((key.to_owned(), value.to_owned())),
        }
        Ok(())
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        (self.pairs.iter().find(|(k, _)| k == key)).map(|(_, v)| v.as_str())
    }

    /// Removes `key`.
    ///
    /// # Errors
    /// `MPI_ERR_INFO_NOKEY` when it is not set.
    pub(crate) fn delete(&mut self, key: &str) -> Result<(), Fail> {
        check_key(key)?;
        let at = (self.pairs.iter().position(|(k, _)| k == key))
            .ok_or_else(|| Fail::new(err::INFO_NOKEY, format!("key {key:?} is not set")))?;
        self.pairs.remove(at);
        Ok(())
    }
}

fn check_key(key: &str) -> Result<(), Fail> {
    match key.is_empty() || key.len() > MAX_KEY {
        true => Err(Fail::new(
            err::INFO_KEY,
            format!("a key of {} bytes", key.len()),
        )),
        false => Ok(()),
    }
}

/// A C string argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(Fail::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: a NUL-terminated string (this function's contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Fail::new(err::ARG, format!("{what} is not UTF-8")))
}

/// Runs `f` on info object `handle`.
fn with_info<R>(handle: Handle, f: impl FnOnce(&mut Info) -> Result<R, Fail>) -> Result<R, Fail> {
    runtime::with(|r| match r.infos.get_mut(handle) {
        Some(info) => f(info),
        None => Err(Fail::new(
            err::INFO,
            format!("invalid info object {handle:#x}"),
        )),
    })
}

/// A new info object holding `info`, its handle written to `out`.
///
/// # Safety
/// `out` is null or valid for a handle.
unsafe fn insert(info: Info, out: *mut Handle) -> Result<(), Fail> {
    let handle = runtime::with(|r| Ok(r.infos.insert(info)))?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(out, handle, "info") }
}

mpi! {
    /// A new, empty info object.
    fn MPI_Info_create / PMPI_Info_create(info: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { insert(Info::default(), info) };
        finish("MPI_Info_create", abi::comm::WORLD, result)
    }
}

mpi! {
    /// A new info object of the environment (empty here).
    fn MPI_Info_create_env / PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { insert(Info::default(), info) };
        finish("MPI_Info_create_env", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Sets `key` to `value`.
    fn MPI_Info_set / PMPI_Info_set(info: Handle, key: *const c_char, value: *const c_char) -> c_int {
        // SAFETY: NUL-terminated strings (the call's contract).
        let result = unsafe { text(key, "key") }.and_then(|k| {
            // SAFETY: as above.
            let v = unsafe { text(value, "value") }?;
            with_info(info, |i| i.set(k, v))
        });
        finish("MPI_Info_set", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Removes `key`.
    fn MPI_Info_delete / PMPI_Info_delete(info: Handle, key: *const c_char) -> c_int {
        // SAFETY: a NUL-terminated string (the call's contract).
        let result = unsafe { text(key, "key") }.and_then(|k| with_info(info, |i| i.delete(k)));
        finish("MPI_Info_delete", abi::comm::WORLD, result)
    }
}

mpi! {
    /// `key`'s value, at most `valuelen` bytes and a NUL, when set.
    fn MPI_Info_get / PMPI_Info_get(
        info: Handle,
        key: *const c_char,
        valuelen: c_int,
        value: *mut c_char,
        flag: *mut c_int,
    ) -> c_int {
        // SAFETY: a NUL-terminated string (the call's contract).
        let result = unsafe { text(key, "key") }.and_then(|k| {
            let found = with_info(info, |i| Ok(i.get(k).map(str::to_owned)))?;
            if let Some(v) = &found {
                let max = usize::try_from(valuelen).unwrap_or(0) + 1;
                let mut len = 0;
                // SAFETY: valuelen + 1 bytes at value (the call's contract).
                unsafe { ptr::write_text(value, &mut len, v, max) }?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(found.is_some()), "flag") }
        });
        finish("MPI_Info_get", abi::comm::WORLD, result)
    }
}

mpi! {
    /// `key`'s value into `value` of `*buflen` bytes (with its NUL);
    /// `*buflen` becomes the value's length with its NUL.
    fn MPI_Info_get_string / PMPI_Info_get_string(
        info: Handle,
        key: *const c_char,
        buflen: *mut c_int,
        value: *mut c_char,
        flag: *mut c_int,
    ) -> c_int {
        // SAFETY: a NUL-terminated string (the call's contract).
        let result = unsafe { text(key, "key") }.and_then(|k| {
            let found = with_info(info, |i| Ok(i.get(k).map(str::to_owned)))?;
            // SAFETY: as the call's contract.
            let room = unsafe { ptr::read(buflen, "buflen") }?;
            if let Some(v) = &found {
                if room > 0 {
                    let mut len = 0;
                    // SAFETY: room bytes at value (the call's contract).
                    unsafe { ptr::write_text(value, &mut len, v, room as usize) }?;
                }
                // SAFETY: as the call's contract.
                unsafe { ptr::write(buflen, v.len() as c_int + 1, "buflen") }?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(found.is_some()), "flag") }
        });
        finish("MPI_Info_get_string", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The length of `key`'s value (without its NUL), when set.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(
        info: Handle,
        key: *const c_char,
        valuelen: *mut c_int,
        flag: *mut c_int,
    ) -> c_int {
        // SAFETY: a NUL-terminated string (the call's contract).
        let result = unsafe { text(key, "key") }.and_then(|k| {
            let found = with_info(info, |i| Ok(i.get(k).map(str::len)))?;
            if let Some(len) = found {
                // SAFETY: as the call's contract.
                unsafe { ptr::write(valuelen, len as c_int, "valuelen") }?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(found.is_some()), "flag") }
        });
        finish("MPI_Info_get_valuelen", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The number of keys set.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: Handle, nkeys: *mut c_int) -> c_int {
        let result = with_info(info, |i| Ok(i.pairs.len() as c_int)).and_then(|n| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(nkeys, n, "nkeys") }
        });
        finish("MPI_Info_get_nkeys", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The `n`th key (in the order keys were first set), into a buffer of
    /// `MPI_MAX_INFO_KEY` bytes.
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: Handle, n: c_int, key: *mut c_char) -> c_int {
        let result = with_info(info, |i| {
            (usize::try_from(n).ok().and_then(|n| i.pairs.get(n)))
                .map(|(k, _)| k.clone())
                .ok_or_else(|| Fail::new(err::ARG, format!("key {n} of {}", i.pairs.len())))
        })
        .and_then(|k| {
            let mut len = 0;
            // SAFETY: MPI_MAX_INFO_KEY + 1 bytes at key (the call's contract).
            unsafe { ptr::write_text(key, &mut len, &k, MAX_KEY + 1) }
        });
        finish("MPI_Info_get_nthkey", abi::comm::WORLD, result)
    }
}

mpi! {
    /// A copy of an info object.
    fn MPI_Info_dup / PMPI_Info_dup(info: Handle, newinfo: *mut Handle) -> c_int {
        let result = with_info(info, |i| Ok(i.clone())).and_then(|copy| {
            // SAFETY: as the call's contract.
            unsafe { insert(copy, newinfo) }
        });
        finish("MPI_Info_dup", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees an info object; the handle becomes `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(info, "info") }.and_then(|h| {
            runtime::with(|r| {
                (r.infos.remove(h).map(drop))
                    .ok_or_else(|| Fail::new(err::INFO, format!("invalid info object {h:#x}")))
            })?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(info, abi::info::NULL, "info") }
        });
        finish("MPI_Info_free", abi::comm::WORLD, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_first_order_and_misuse_is_refused() {
        let mut i = Info::default();
        i.set("b", "1").unwrap();
        i.set("a", "2").unwrap();
        i.set("b", "3").unwrap();
        assert_eq!(
            i.pairs,
            vec![("b".into(), "3".into()), ("a".into(), "2".into())]
        );
        assert_eq!(i.get("a"), Some("2"));
        assert_eq!(i.delete("c").map_err(|f| f.class), Err(err::INFO_NOKEY));
        assert_eq!(i.set("", "x").map_err(|f| f.class), Err(err::INFO_KEY));
        let long = "v".repeat(MAX_VALUE + 1);
        assert_eq!(i.set("k", &long).map_err(|f| f.class), Err(err::INFO_VALUE));
        i.delete("b").unwrap();
        assert_eq!(i.get("b"), None);
    }
}
