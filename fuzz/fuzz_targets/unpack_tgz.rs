//! The unpacker on bytes named `input.tgz` (seeds: `fuzz/seeds/unpack_tgz/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("tgz", data);
});
