//! Every kernel backend this CPU can run equals the scalar reference bit
//! for bit (core's conformance harness). With TERN_KERNELS set, the named
//! backend must be the one in use (no silent fallback).

#[test]
fn every_available_backend_conforms() {
    let names = tern::kernels::available();
    println!("backends on this CPU: {names:?}");
    for name in names {
        let k = tern::kernels::by_name(name).unwrap();
        assert_eq!(k.name(), name);
        tern_core::kernels::conformance::check(k).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn requested_backend_is_the_one_used() {
    if let Ok(want) = std::env::var("TERN_KERNELS") {
        assert_eq!(tern::kernels::select().map(|k| k.name()).unwrap(), want);
    }
}
