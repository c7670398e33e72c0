//! The rank program of the multi-threaded test: `threads-check`. On every
//! rank a helper thread, given its own window and Comm, `rget`s its right
//! neighbour's part again and again and checks every byte, while the main
//! thread runs 100 allreduces on its own Comm and checks every sum; then
//! the helper sums its checks with an allreduce on its Comm. Prints
//! `rank R: threads ok`; exits non-zero naming the rank and the check
//! otherwise.

#![forbid(unsafe_code)]

use onesided::prelude::*;
use onesided_tests::rank::{check, must, pattern};

/// Bytes of each rank's window.
const LEN: usize = 64 * 1024;
/// The helper's reads, and the main thread's allreduces.
const READS: usize = 200;
const ALLREDUCES: u64 = 100;

fn main() {
    let world = must(0, "init", World::init());
    let me = world.rank();
    must(me, "threads", threads(&world));
    must(me, "finalize", world.finalize());
    println!("rank {me}: threads ok");
}

fn threads(world: &World) -> Result<(), onesided::Error> {
    let (me, n) = (world.rank(), world.size());
    let group = Group::world(n);
    let rma = Rma::new(world.endpoint())?;
    // Everything the helper uses is made here, in the same order on every
    // rank, over groups of its own, and moved to it.
    let comm = Comm::new(&rma, group.clone())?;
    let helper_comm = Comm::new(&rma, group.tagged(2))?;
    let window = rma.allocate(&group.tagged(1), LEN, RemoteAccess::ReadOnly)?;
    let mine: Vec<u8> = (0..LEN).map(|i| pattern(me, i)).collect();
    window.write_local(0, &mine)?;
    comm.barrier()?;
    let helper = std::thread::spawn(move || -> Result<(), onesided::Error> {
        let right = (me + 1) % n;
        let epoch = window.lock_all(Assert::empty())?;
        let mut buf = vec![0u8; LEN];
        for k in 0..READS {
            // Offsets and lengths that move, so no read is like the last.
            let at = (k * 4099) % (LEN / 2);
            let len = LEN / 2 - (k * 61) % 1024;
            buf[..len].fill(0xff);
            epoch.rget(right, at as u64, &mut buf[..len])?.wait()?;
            let wrong = (0..len).find(|&i| buf[i] != pattern(right, at + i));
            check(me, wrong.is_none(), || {
                format!("helper: rget {k} from rank {right}: byte {wrong:?} of {at}+{len}")
            });
        }
        epoch.unlock()?;
        let mut total = [0u64];
        helper_comm.allreduce(&[READS as u64], &mut total, Op::SUM)?;
        check(me, total[0] == READS as u64 * u64::from(n), || {
            format!("helper: allreduce of the read counts gave {}", total[0])
        });
        Ok(())
    });
    for round in 0..ALLREDUCES {
        let mut out = [0u64; 2];
        comm.allreduce(&[u64::from(me) + 1, round], &mut out, Op::SUM)?;
        let want = [u64::from(n) * u64::from(n + 1) / 2, round * u64::from(n)];
        check(me, out == want, || {
            format!("main: allreduce {round} gave {out:?}, not {want:?}")
        });
    }
    match helper.join() {
        Ok(result) => result,
        Err(_) => onesided_tests::rank::fail(me, "the helper thread panicked"),
    }
}
