//! What must not compile: an RMA access outside an epoch, a use of a
//! freed window, a free inside an epoch, an access after unlock
//! (`tests/ui/*.rs`, each with the compiler's error beside it).

#[test]
fn misuse_of_windows_and_epochs_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}
