//! Assertions about epochs (MPI's `assert` argument), as flags.

use crate::Error;

bitflags::bitflags! {
    /// What the program vouches for when it opens or closes an epoch;
    /// the assertions of MPI that mean something here. An assertion a
    /// call does not take is an error ([`Error::BadAssert`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Assert: u32 {
        /// `lock`, `lock_all`: no other process holds or asks a
        /// conflicting lock, so no lock word is touched
        /// (`MPI_MODE_NOCHECK`; MaM's epochs use it).
        const NOCHECK = 1;
        /// `fence`: no operation of this process precedes it, so it
        /// waits for none (`MPI_MODE_NOPRECEDE`).
        const NOPRECEDE = 1 << 1;
        /// `fence`: no epoch follows it; it ends the fence epoch
        /// (`MPI_MODE_NOSUCCEED`).
        const NOSUCCEED = 1 << 2;
    }
}

impl Assert {
    /// Checks that `call` takes every assertion given.
    ///
    /// # Errors
    /// [`Error::BadAssert`] naming the call and the assertions it does not
    /// take.
    pub(crate) fn allow(self, call: &'static str, allowed: Assert) -> Result<Assert, Error> {
        let extra = self.difference(allowed);
        if extra.is_empty() {
            Ok(self)
        } else {
            Err(Error::BadAssert { call, given: extra })
        }
    }
}

/// The names of `assert`'s flags, `|`-separated.
pub(crate) fn names(assert: Assert) -> String {
    let names: Vec<&str> = assert.iter_names().map(|(name, _)| name).collect();
    names.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_refuses_the_assertions_it_does_not_take() {
        let fence = Assert::NOPRECEDE | Assert::NOSUCCEED;
        assert!(Assert::empty().allow("fence", fence).is_ok());
        assert!((Assert::NOPRECEDE | Assert::NOSUCCEED)
            .allow("fence", fence)
            .is_ok());
        let e = (Assert::NOCHECK | Assert::NOSUCCEED)
            .allow("fence", fence)
            .unwrap_err();
        assert!(
            matches!(e, Error::BadAssert { call: "fence", given } if given == Assert::NOCHECK),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "fence does not take the assertion(s) NOCHECK"
        );
    }
}
