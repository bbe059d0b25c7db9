//! The unpacker on bytes named `input.mbox` (seeds: `fuzz/seeds/unpack_mbox/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("mbox", data);
});
