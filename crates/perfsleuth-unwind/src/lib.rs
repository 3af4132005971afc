//! A sampled user stack turned into named frames: the process's memory map
//! (`maps`), each mapped ELF file's call frame information, symbols and line
//! tables (`elf`), and the unwinding loop over a copy of the stack
//! (`unwind`). Shared by the lock tracer (futex waits) and the profiler
//! (`cpu-clock` samples); it knows nothing of either.

pub mod elf;
pub mod maps;
pub mod unwind;

pub use maps::{Mapping, Maps};
pub use unwind::{Frame, Symbolizer, UserStack};
