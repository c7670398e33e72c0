//! The rank program of the futures test: `await-check`. On a minimal
//! executor of its own (a parked thread, no async runtime), every rank
//! `.await`s an `iallreduce` and an `ialltoallv` and a reduction of the
//! master/worker reducer, and checks each result against the serial
//! one; meanwhile it holds what the public accessors hand out (the Comm's
//! observed profile, the launch, the group) across a collective and a
//! reduction. Prints `rank R: await ok`; exits non-zero naming the rank
//! and the check otherwise.

#![forbid(unsafe_code)]

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use onesided::prelude::*;
use onesided::reduce::{Config, Reducer, Sum};
use onesided_tests::rank::{check, must};

/// Unparks the executor's thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to its end on this thread, parked while it is pending.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

fn main() {
    let world = must(0, "init", World::init());
    let me = world.rank();
    must(me, "await", awaited(&world));
    must(me, "finalize", world.finalize());
    println!("rank {me}: await ok");
}

fn awaited(world: &World) -> Result<(), onesided::Error> {
    let (me, n) = (world.rank(), world.size());
    let group = Group::world(n);
    let rma = Rma::new(world.endpoint())?;
    let comm = Comm::new(&rma, group.clone())?;
    // Held across the calls below: owned values, nothing borrowed.
    let observed = comm.observed();
    let launch = world.launch();
    let members = comm.group().members().to_vec();

    let run = comm.iallreduce(vec![u64::from(me) + 1; 3], vec![0u64; 3], Op::SUM)?;
    let sum = block_on(run)?.output;
    let want = u64::from(n) * u64::from(n + 1) / 2;
    check(me, sum == vec![want; 3], || {
        format!("iallreduce gave {sum:?}, not {want}")
    });

    // Rank r sends r + 1 elements of value 100 r + peer to each peer.
    let sends = vec![me as usize + 1; n as usize];
    let input: Vec<u32> = (0..n)
        .flat_map(|p| vec![100 * me + p; me as usize + 1])
        .collect();
    let recvs: Vec<usize> = (0..n as usize).map(|p| p + 1).collect();
    let output = vec![0u32; recvs.iter().sum()];
    let got = block_on(comm.ialltoallv(input, &sends, output, &recvs)?)?.output;
    let want: Vec<u32> = (0..n)
        .flat_map(|p| vec![100 * p + me; p as usize + 1])
        .collect();
    check(me, got == want, || {
        format!("ialltoallv gave {got:?}, not {want:?}")
    });

    let reducer = Reducer::new(world, &rma, &group, Config::default())?;
    let data: Vec<f64> = (0..1000).map(|i| f64::from(me) + f64::from(i)).collect();
    let result = block_on(reducer.reduce(0, &data, Sum::default(), 7)?)?;
    match (me, result) {
        (0, Some(v)) => {
            let ranks: f64 = (0..n).map(f64::from).sum();
            let bad = (v.iter().enumerate()).find(|&(i, &x)| x != ranks + f64::from(n) * i as f64);
            check(me, v.len() == 1000 && bad.is_none(), || {
                format!("the reduction gave {:?} at {bad:?}", v.len())
            });
        }
        (0, None) => check(me, false, || "no result at the root".into()),
        (_, r) => check(me, r.is_none(), || "a result away from the root".into()),
    }
    drop(reducer);

    check(me, observed.failures().count() == 0, || {
        "failed algorithms".into()
    });
    check(me, launch.size >= 1 && launch.rank < launch.size, || {
        format!("{launch:?}")
    });
    check(me, members == group.members(), || {
        "the group changed".into()
    });
    drop((comm, rma));
    Ok(())
}
