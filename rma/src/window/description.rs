//! What a process tells its peers about an exposure or a dynamic window,
//! and its encoding on the wire (control-plane replies, boards, pushes).

use onesided_fabric::RemoteMemory;

use super::HEADER;
use crate::Error;

/// What a peer is told about an exposure or a dynamic window.
#[derive(Clone)]
pub(super) enum Described {
    Exposure {
        header: RemoteMemory,
        data: RemoteMemory,
        nonce: u64,
        /// Shared-memory names: header, data.
        names: (String, String),
    },
    Attachments(Attachments),
}

impl Described {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        match self {
            Described::Exposure {
                header,
                data,
                nonce,
                names,
            } => {
                out.push(1);
                out.extend_from_slice(&header.to_bytes());
                out.extend_from_slice(&data.to_bytes());
                out.extend_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(names.0.as_bytes());
                out.push(0);
                out.extend_from_slice(names.1.as_bytes());
            }
            Described::Attachments(list) => {
                out.push(2);
                for a in list {
                    out.extend_from_slice(&a.disp.to_le_bytes());
                    out.extend_from_slice(&a.remote.to_bytes());
                    let name = a.name.as_bytes();
                    out.push(name.len().min(255) as u8);
                    out.extend_from_slice(&name[..name.len().min(255)]);
                }
            }
        }
        out
    }

    pub(super) fn decode(reply: &[u8]) -> Result<Described, Error> {
        let bad =
            |why: &str| onesided_fabric::Error::BadDescriptor(format!("window description: {why}"));
        const R: usize = RemoteMemory::ENCODED_LEN;
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        match reply.split_first() {
            Some((1, rest)) if rest.len() >= 2 * R + 8 => {
                let header = RemoteMemory::from_bytes(&rest[..R])?;
                let data = RemoteMemory::from_bytes(&rest[R..2 * R])?;
                let nonce = word(&rest[2 * R..2 * R + 8]);
                let names = std::str::from_utf8(&rest[2 * R + 8..])
                    .map_err(|_| bad("names are not UTF-8"))?;
                let (h, d) = names.split_once('\0').ok_or_else(|| bad("names"))?;
                if header.len < HEADER as u64 {
                    return Err(bad("header region too short").into());
                }
                Ok(Described::Exposure {
                    header,
                    data,
                    nonce,
                    names: (h.to_string(), d.to_string()),
                })
            }
            Some((2, mut rest)) => {
                let mut list = Vec::new();
                while !rest.is_empty() {
                    let (fixed, more) = rest
                        .split_at_checked(8 + R + 1)
                        .ok_or_else(|| bad("attachment too short"))?;
                    let (name, more) = more
                        .split_at_checked(usize::from(fixed[8 + R]))
                        .ok_or_else(|| bad("attachment name too short"))?;
                    list.push(Attached {
                        disp: word(&fixed[..8]),
                        remote: RemoteMemory::from_bytes(&fixed[8..8 + R])?,
                        name: String::from_utf8(name.to_vec())
                            .map_err(|_| bad("attachment name is not UTF-8"))?,
                    });
                    rest = more;
                }
                Ok(Described::Attachments(list))
            }
            _ => Err(bad("malformed reply").into()),
        }
    }
}

/// A dynamic window's attachments at a peer: (displacement, descriptor).
pub(super) type Attachments = Vec<Attached>;

/// One attachment of a dynamic window, as peers see it.
#[derive(Clone, Debug)]
pub(super) struct Attached {
    pub disp: u64,
    pub remote: RemoteMemory,
    /// Its shared-memory name (empty when it has none).
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use onesided_fabric::Access;

    #[test]
    fn descriptions_round_trip_and_reject_garbage() {
        let r = |base| RemoteMemory {
            base,
            key: 7,
            len: HEADER as u64,
            access: Access::REMOTE_READ,
        };
        let x = Described::Exposure {
            header: r(1),
            data: r(2),
            nonce: 3,
            names: ("/a".into(), "/b".into()),
        };
        match Described::decode(&x.encode()).unwrap() {
            Described::Exposure {
                data, nonce, names, ..
            } => {
                assert_eq!((data.base, nonce), (2, 3));
                assert_eq!(names, ("/a".to_string(), "/b".to_string()));
            }
            Described::Attachments(_) => panic!("wrong kind"),
        }
        let d = Described::Attachments(vec![
            Attached {
                disp: 1 << 40,
                remote: r(9),
                name: "/x".into(),
            },
            Attached {
                disp: 2 << 40,
                remote: r(10),
                name: String::new(),
            },
        ]);
        match Described::decode(&d.encode()).unwrap() {
            Described::Attachments(list) => {
                assert_eq!((list[0].disp, list[0].name.as_str()), (1 << 40, "/x"));
                assert_eq!((list[1].remote.base, list[1].name.as_str()), (10, ""));
            }
            Described::Exposure { .. } => panic!("wrong kind"),
        }
        for garbage in [&[][..], &[1, 2, 3], &[2, 0], &[9; 100]] {
            assert!(Described::decode(garbage).is_err());
        }
    }
}
