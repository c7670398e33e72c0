//! Groups: ordered subsets of a job's ranks with their own numbering.
//!
//! A group is plain data: every member that knows the member list can build
//! it, so creating one costs no communication (as `MPI_Group_incl`, unlike
//! `MPI_Comm_create`).

use crate::Error;

/// An ordered set of distinct job ranks. Group rank `g` is job rank
/// `members()[g]`.
///
/// ```
/// use onesided_rma::Group;
///
/// let evens = Group::new(vec![0, 2, 4]).unwrap();
/// assert_eq!(evens.job_rank(1).unwrap(), 2);
/// assert_eq!(evens.group_rank(4), Some(2));
/// // The same members, numbered apart (a helper thread's objects).
/// let helper = evens.tagged(1);
/// assert_eq!(helper.members(), evens.members());
/// assert_ne!(helper.key(), evens.key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Group {
    /// Shared: groups are cloned per collective call.
    members: std::sync::Arc<[u32]>,
    /// FNV-1a of the members: numbers the group's collective objects.
    key: u64,
}

fn fnv(members: &[u32]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in members.iter().flat_map(|m| m.to_le_bytes()) {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

impl Group {
    /// The group of `members`, in that order.
    ///
    /// # Errors
    /// [`Error::BadGroup`] when `members` is empty or names a rank twice.
    pub fn new(members: Vec<u32>) -> Result<Group, Error> {
        if members.is_empty() {
            return Err(Error::BadGroup("a group needs at least one member".into()));
        }
        let mut sorted = members.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::BadGroup(format!("rank {} appears twice", w[0])));
        }
        Ok(Group {
            key: fnv(&members),
            members: members.into(),
        })
    }

    /// Job ranks `0..size`, in order.
    pub fn world(size: u32) -> Group {
        let members: Vec<u32> = (0..size.max(1)).collect();
        Group {
            key: fnv(&members),
            members: members.into(),
        }
    }

    /// Number of members.
    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// The members' job ranks, in group order.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// The job rank of group rank `group_rank`.
    ///
    /// # Errors
    /// [`Error::NotInGroup`] when `group_rank` is not below [`Group::size`].
    pub fn job_rank(&self, group_rank: u32) -> Result<u32, Error> {
        self.members
            .get(group_rank as usize)
            .copied()
            .ok_or_else(|| Error::NotInGroup {
                rank: group_rank,
                size: self.size(),
            })
    }

    /// The group rank of job rank `job_rank`, if it is a member.
    pub fn group_rank(&self, job_rank: u32) -> Option<u32> {
        self.members
            .iter()
            .position(|&m| m == job_rank)
            .map(|p| p as u32)
    }

    /// A hash of the member list (and tag, see [`Group::tagged`]): the
    /// same on every member.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The same members, numbered apart: windows, exposures and barriers
    /// over `group.tagged(t)` never mix with those over `group` or over
    /// another tag. Collective objects over one group must be created in
    /// the same order on every member; a thread that creates its own
    /// beside another thread's uses a group tagged for it (the role of
    /// `MPI_Comm_dup`). No message.
    pub fn tagged(&self, tag: u64) -> Group {
        let mut key = self.key ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        key = (key ^ (key >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Group {
            members: self.members.clone(),
            key: key ^ (key >> 29),
        }
    }

    /// Whether job rank `job_rank` is a member.
    pub fn contains(&self, job_rank: u32) -> bool {
        self.group_rank(job_rank).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_members_in_the_given_order() {
        let g = Group::new(vec![5, 2, 7]).unwrap();
        assert_eq!(g.size(), 3);
        assert_eq!(g.job_rank(0).unwrap(), 5);
        assert_eq!(g.job_rank(2).unwrap(), 7);
        assert_eq!(g.group_rank(2), Some(1));
        assert_eq!(g.group_rank(3), None);
        assert!(g.contains(7) && !g.contains(0));
        assert!(matches!(
            g.job_rank(3),
            Err(Error::NotInGroup { rank: 3, size: 3 })
        ));
    }

    #[test]
    fn refuses_empty_and_duplicate_members() {
        assert!(matches!(Group::new(vec![]), Err(Error::BadGroup(_))));
        let e = Group::new(vec![1, 4, 1]).unwrap_err();
        assert_eq!(e.to_string(), "bad group: rank 1 appears twice");
    }

    #[test]
    fn tagged_groups_keep_the_members_under_another_key() {
        let g = Group::new(vec![3, 1]).unwrap();
        let (a, b) = (g.tagged(1), g.tagged(2));
        assert_eq!(a.members(), g.members());
        assert_ne!(a.key(), g.key());
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key(), g.tagged(1).key(), "the same on every member");
    }

    #[test]
    fn world_is_every_rank() {
        let g = Group::world(4);
        assert_eq!(g.members(), &[0, 1, 2, 3]);
        assert_eq!(Group::world(0).size(), 1, "a job has at least one rank");
    }
}
