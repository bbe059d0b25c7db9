//! Every extractor's entry point: the first byte picks the extractor, the rest is the file.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some((first, rest)) = data.split_first() {
        let kind = ingest_fuzz::KINDS[usize::from(*first) % ingest_fuzz::KINDS.len()];
        ingest_fuzz::extract_as(kind, rest);
    }
});
