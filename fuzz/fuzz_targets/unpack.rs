//! The container resolver: any bytes, as a top-level file, under small limits (detected by
//! their bytes alone: the name `input.bin` says nothing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ingest_fuzz::unpack_as("bin", data);
});
