//! The unpacker on bytes named `input.zip` (seeds: `fuzz/seeds/unpack_zip/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("zip", data);
});
