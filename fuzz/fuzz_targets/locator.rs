//! Locator parsing: never panics, and what parses prints back to a string that parses to the
//! same locator.
#![no_main]

use ingest::Locator;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(l) = s.parse::<Locator>() {
            let again: Locator = l.to_string().parse().expect("printed locator parses");
            assert_eq!(again, l);
        }
    }
});
