//! The unpacker on bytes named `input.msg` (seeds: `fuzz/seeds/unpack_msg/`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("msg", data);
});
