//! Each rank prints `rank R of N on PROVIDER`.
//!
//! `osrun -n 2 target/release/examples/hello`, or under MPICH's Hydra:
//! `mpiexec.hydra -n 2 target/release/examples/hello`.

use onesided_fabric::World;

fn main() {
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("hello: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "rank {} of {} on {}",
        world.rank(),
        world.size(),
        world.endpoint().granted().provider()
    );
    if let Err(e) = world.finalize() {
        eprintln!("hello: {e}");
        std::process::exit(1);
    }
}
