//! The unpacker on bytes named `input.eml` (seeds: `fuzz/seeds/unpack_eml/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("eml", data);
});
