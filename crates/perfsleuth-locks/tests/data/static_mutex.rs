//! A static `std::sync::Mutex` taken by four threads: built by the
//! `trace` tests with rustc, whose default linker on x86-64 Linux (lld)
//! shares a file page between read-only data and code.
use std::sync::Mutex;
static HOT: Mutex<u64> = Mutex::new(0);
#[inline(never)]
fn bump() { let mut g = HOT.lock().unwrap(); for _ in 0..200 { *g = std::hint::black_box(*g + 1); } }
fn main() {
    std::thread::scope(|s| { for _ in 0..4 { s.spawn(|| for _ in 0..200000 { bump() }); } });
    println!("{}", HOT.lock().unwrap());
}
