//! A binomial tree over the members of a list, as plain arithmetic: the
//! broadcast and gather of a membership change (`World`'s spawn). Member
//! `k` of `members` (sorted, `root` among them) has tree index
//! `(k - root's position) mod n`; index `i` has the children `i + 2^j`
//! for every `2^j > i` below `n`, and its parent is `i` without its
//! highest set bit. ceil(log2 n) rounds from the root to every member, at
//! most ceil(log2 n) children per member.

/// The children of `me` in the tree over `members` rooted at `root`
/// (both among `members`); none when either is not.
pub fn children(members: &[u32], root: u32, me: u32) -> Vec<u32> {
    let Some((i, at)) = index(members, root, me) else {
        return Vec::new();
    };
    let n = members.len() as u64;
    let first = match i {
        0 => 1,
        i => 1u64 << (64 - i.leading_zeros()),
    };
    std::iter::successors(Some(first), |step| step.checked_mul(2))
        .take_while(|&step| i + step < n)
        .map(|step| members[((at + i + step) % n) as usize])
        .collect()
}

/// The parent of `me` in the same tree; none for the root or a stranger.
pub fn parent(members: &[u32], root: u32, me: u32) -> Option<u32> {
    let (i, at) = index(members, root, me)?;
    let n = members.len() as u64;
    (i > 0).then(|| {
        let up = i & !(1u64 << (63 - i.leading_zeros()));
        members[((at + up) % n) as usize]
    })
}

/// `me`'s tree index and the root's position.
fn index(members: &[u32], root: u32, me: u32) -> Option<(u64, u64)> {
    let at = members.binary_search(&root).ok()? as u64;
    let k = members.binary_search(&me).ok()? as u64;
    let n = members.len() as u64;
    Some(((k + n - at) % n, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_has_one_parent_and_is_reached_from_the_root() {
        for n in 1..=17u32 {
            // Members with gaps (ranks that died or left).
            let members: Vec<u32> = (0..n).map(|k| 3 * k + 1).collect();
            for &root in &members {
                let mut reached = vec![root];
                let mut depth = 0;
                let mut frontier = vec![root];
                while !frontier.is_empty() {
                    let next: Vec<u32> = (frontier.iter())
                        .flat_map(|&m| children(&members, root, m))
                        .collect();
                    for &c in &next {
                        assert_eq!(
                            parent(&members, root, c),
                            (frontier.iter())
                                .copied()
                                .find(|&m| children(&members, root, m).contains(&c))
                        );
                    }
                    reached.extend(&next);
                    frontier = next;
                    depth += 1;
                }
                reached.sort();
                assert_eq!(reached, members, "n {n} root {root}");
                let rounds = crate::dissemination::rounds(n);
                assert!(depth - 1 <= rounds, "n {n}: depth");
                assert_eq!(parent(&members, root, root), None);
                assert!(members
                    .iter()
                    .all(|&m| children(&members, root, m).len() as u32 <= rounds));
            }
        }
        assert!(children(&[1, 2], 3, 1).is_empty(), "root not a member");
        assert_eq!(parent(&[1, 2], 1, 5), None, "a stranger");
        assert_eq!(children(&[0, 1, 2, 3, 4], 0, 0), vec![1, 2, 4]);
        assert_eq!(children(&[0, 1, 2, 3, 4], 3, 3), vec![4, 0, 2]);
        assert_eq!(parent(&[0, 1, 2, 3, 4], 3, 1), Some(4));
    }
}
