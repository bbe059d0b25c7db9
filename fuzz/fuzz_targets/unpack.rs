//! The container resolver: any bytes, as a top-level file, under small limits.
#![no_main]

use ingest::testing::{Leaf, Unpacker};
use ingest::{Limits, Locator};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_total_bytes: 32 * 1024 * 1024,
        max_file_bytes: 8 * 1024 * 1024,
        max_files: 2_000,
        ..Limits::default()
    };
    let top = Locator::root("input.bin");
    let mut leaves = 0u64;
    Unpacker::new(&limits).expand_bytes(data.to_vec(), &top, &mut |leaf| {
        leaves += 1;
        let locator = match &leaf {
            Leaf::File { locator, .. }
            | Leaf::Skipped { locator, .. }
            | Leaf::Failed { locator, .. }
            | Leaf::Shadowed { locator, .. }
            | Leaf::Container { locator, .. } => locator,
        };
        assert!(locator.is_within(&top));
        let printed = locator.to_string();
        assert_eq!(printed.parse::<Locator>().ok().as_ref(), Some(locator));
    });
    // Every member is charged to the member limit: one line each, plus the top's.
    assert!(leaves <= limits.max_files + 1, "{leaves} leaves");
});
