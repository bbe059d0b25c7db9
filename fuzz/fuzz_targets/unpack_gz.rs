//! The unpacker on bytes named `input.gz` (seeds: `fuzz/seeds/unpack_gz/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("gz", data);
});
