//! The unpacker on bytes named `input.tar` (seeds: `fuzz/seeds/unpack_tar/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("tar", data);
});
