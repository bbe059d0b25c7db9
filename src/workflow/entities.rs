//! Rule-based entity extraction, without AI: what a tool result names that an agent later asks
//! for by value — amounts with their currency, dates, IBANs (checked with their mod-97 check
//! digits), e-mail addresses and document ids (`INV-2024-0042`, `Invoice No. 4711`).
//!
//! Each found entity gets a key `kind:normalised value` (`iban:DE89370400440532013000`,
//! `email:anna@example.com`), so the same entity found twice is remembered once. At most
//! [`MAX_FOUND`] entities are taken from one text, in the order they appear; texts are read
//! only up to [`MAX_SCANNED_BYTES`].

use std::sync::LazyLock;

use regex::Regex;

/// The most entities taken from one text.
pub const MAX_FOUND: usize = 200;
/// The most bytes of a text scanned for entities.
pub const MAX_SCANNED_BYTES: usize = 4 * 1024 * 1024;

/// What kind of thing an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// An amount with its currency.
    Amount,
    /// A calendar date.
    Date,
    /// An international bank account number whose check digits hold.
    Iban,
    /// An e-mail address.
    Email,
    /// A document, invoice, order or case id.
    DocumentId,
}

impl EntityKind {
    /// The key prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Amount => "amount",
            EntityKind::Date => "date",
            EntityKind::Iban => "iban",
            EntityKind::Email => "email",
            EntityKind::DocumentId => "document_id",
        }
    }
}

/// One entity found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntity {
    /// What it is.
    pub kind: EntityKind,
    /// As written in the text.
    pub value: String,
    /// Normalised (no spaces in an IBAN, lowercase e-mail, `EUR 1234.50` for an amount):
    /// what makes two mentions one entity.
    pub normalized: String,
}

impl FoundEntity {
    /// Its key: `kind:normalised`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.normalized)
    }
}

// The patterns are fixed strings, compiled once; `regex` guarantees linear time in the input.
static EMAIL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,6}\.[A-Za-z]{2,24}(?-u:\b)").ok()
});
static IBAN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)").ok()
});
const CURRENCY: &str = r"(?:EUR|USD|CHF|GBP|JPY|CAD|AUD|SEK|NOK|DKK|PLN|CZK|€|\$|£|¥|Fr\.)";
// A number ends where its digits end: each form is followed by a word boundary, so `12480.00`
// is not read as `124` (the grouped form's first three digits) followed by more digits.
const NUMBER: &str = r"[0-9]{1,3}(?:[ ',.’][0-9]{3}){0,6}(?:[.,][0-9]{1,2})?(?-u:\b)|[0-9]{1,15}(?:[.,][0-9]{1,2})?(?-u:\b)";
static AMOUNT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?:(?P<c1>{CURRENCY})\s?(?P<n1>{NUMBER}))|(?:(?-u:\b)(?P<n2>{NUMBER})\s?(?P<c2>{CURRENCY}))"
    ))
    .ok()
});
const MONTHS: &str = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Januar|Februar|März|Mai|Juni|Juli|Oktober|Dezember";
static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?-u:\b)(?:(?P<iy>[12][0-9]{{3}})-(?P<im>[01][0-9])-(?P<id>[0-3][0-9])|(?P<dd>[0-3]?[0-9])\.(?P<dm>[01]?[0-9])\.(?P<dy>[12][0-9]{{3}})|(?P<ud>[0-3]?[0-9]) (?P<um>{MONTHS})\.? (?P<uy>[12][0-9]{{3}})|(?P<am>{MONTHS})\.? (?P<ad>[0-3]?[0-9]),? (?P<ay>[12][0-9]{{3}}))(?-u:\b)"
    ))
    .ok()
});
static DOC_ID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i:(?-u:\b)(?:invoice|rechnung|order|bestellung|contract|vertrag|ticket|case|document|doc|reference|ref|po|quote|angebot)\s*(?:no\.?|nr\.?|number|num\.?|#|id)?\s*[:#]?\s*)(?P<labelled>[A-Z0-9][A-Z0-9/\-]{3,40})(?-u:\b)|(?-u:\b)(?P<coded>[A-Z]{2,6}-[0-9]{2,12}(?:-[0-9A-Z]{1,12}){0,3})(?-u:\b)",
    )
    .ok()
});

/// Every entity in `text` (its first [`MAX_SCANNED_BYTES`]), each key once, in the order
/// first seen, at most [`MAX_FOUND`] (and at most that many matches per rule are looked at).
/// Word boundaries are ASCII (`(?-u:\b)`), which keeps the regex engine on its fast path over
/// any text.
pub fn find(text: &str) -> Vec<FoundEntity> {
    let mut end = text.len().min(MAX_SCANNED_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = text.get(..end).unwrap_or_default();
    // (position, entity): sorted by where they start, so the cap keeps the first ones.
    let mut found: Vec<(usize, FoundEntity)> = Vec::new();
    let mut ibans: Vec<(usize, usize)> = Vec::new();
    if let Some(re) = IBAN.as_ref() {
        for m in re.find_iter(text).take(MAX_FOUND) {
            let compact: String = m.as_str().chars().filter(|c| !c.is_whitespace()).collect();
            if iban_valid(&compact) {
                ibans.push((m.start(), m.end()));
                found.push((m.start(), entity(EntityKind::Iban, m.as_str(), compact)));
            }
        }
    }
    let in_iban = |s: usize, e: usize| ibans.iter().any(|&(a, b)| s < b && e > a);
    if let Some(re) = EMAIL.as_ref() {
        for m in re.find_iter(text).take(MAX_FOUND) {
            found.push((
                m.start(),
                entity(EntityKind::Email, m.as_str(), m.as_str().to_lowercase()),
            ));
        }
    }
    if let Some(re) = AMOUNT.as_ref() {
        for c in re.captures_iter(text).take(MAX_FOUND) {
            let (Some(whole), Some(cur), Some(num)) = (
                c.get(0),
                c.name("c1").or(c.name("c2")),
                c.name("n1").or(c.name("n2")),
            ) else {
                continue;
            };
            if in_iban(whole.start(), whole.end()) {
                continue;
            }
            let normalized = format!("{} {}", currency_code(cur.as_str()), number(num.as_str()));
            found.push((
                whole.start(),
                entity(EntityKind::Amount, whole.as_str().trim(), normalized),
            ));
        }
    }
    if let Some(re) = DATE.as_ref() {
        for c in re.captures_iter(text).take(MAX_FOUND) {
            let Some(whole) = c.get(0) else { continue };
            let part = |n: &str| c.name(n).map(|m| m.as_str());
            let ymd = match (part("iy"), part("dy"), part("uy"), part("ay")) {
                (Some(y), _, _, _) => (y, part("im").and_then(month_num), part("id")),
                (_, Some(y), _, _) => (y, part("dm").and_then(month_num), part("dd")),
                (_, _, Some(y), _) => (y, part("um").and_then(month_of), part("ud")),
                (_, _, _, Some(y)) => (y, part("am").and_then(month_of), part("ad")),
                _ => continue,
            };
            let (y, Some(m), Some(d)) = ymd else { continue };
            let Ok(d) = d.parse::<u32>() else { continue };
            if !(1..=31).contains(&d) {
                continue;
            }
            found.push((
                whole.start(),
                entity(
                    EntityKind::Date,
                    whole.as_str(),
                    format!("{y}-{m:02}-{d:02}"),
                ),
            ));
        }
    }
    if let Some(re) = DOC_ID.as_ref() {
        for c in re.captures_iter(text).take(MAX_FOUND) {
            let Some(id) = c.name("labelled").or(c.name("coded")) else {
                continue;
            };
            // An id is not a plain word or a plain year: it holds a digit.
            if !id.as_str().chars().any(|ch| ch.is_ascii_digit()) || in_iban(id.start(), id.end()) {
                continue;
            }
            found.push((
                id.start(),
                entity(
                    EntityKind::DocumentId,
                    id.as_str(),
                    id.as_str().to_uppercase(),
                ),
            ));
        }
    }
    // A value longer than an entity may be (a run of digits, a long domain) is no entity.
    found.retain(|(_, e)| {
        e.value.len() <= super::MAX_VALUE_BYTES && e.key().len() <= super::MAX_KEY_BYTES
    });
    found.sort_by_key(|(at, _)| *at);
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| seen.insert(e.key()))
        .take(MAX_FOUND)
        .collect()
}

fn entity(kind: EntityKind, value: &str, normalized: String) -> FoundEntity {
    FoundEntity {
        kind,
        value: value.to_string(),
        normalized,
    }
}

/// Whether `iban` (no spaces) has a known length range and its check digits hold (ISO 13616:
/// the country and check digits moved to the end, letters as 10..35, the number mod 97 is 1).
pub fn iban_valid(iban: &str) -> bool {
    if !(15..=34).contains(&iban.len()) || !iban.is_ascii() {
        return false;
    }
    let (head, tail) = iban.split_at(4);
    let mut rem: u32 = 0;
    for ch in tail.chars().chain(head.chars()) {
        let v = match ch {
            '0'..='9' => u32::from(ch) - u32::from('0'),
            'A'..='Z' => u32::from(ch) - u32::from('A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

fn currency_code(c: &str) -> &str {
    match c {
        "€" => "EUR",
        "$" => "USD",
        "£" => "GBP",
        "¥" => "JPY",
        "Fr." => "CHF",
        other => other,
    }
}

/// `1.234,50` / `1,234.50` / `1'234.50` / `1 234` → `1234.50` / `1234`: the last `.` or `,`
/// followed by one or two digits is the decimal mark; every other separator groups thousands.
fn number(n: &str) -> String {
    let digits_after = |i: usize| n.len() - i - 1;
    let decimal = n
        .rfind(['.', ','])
        .filter(|&i| (1..=2).contains(&digits_after(i)));
    let mut out = String::new();
    for (i, ch) in n.char_indices() {
        if ch.is_ascii_digit() {
            out.push(ch);
        } else if Some(i) == decimal {
            out.push('.');
        }
    }
    out
}

fn month_num(m: &str) -> Option<u32> {
    m.parse::<u32>().ok().filter(|m| (1..=12).contains(m))
}

fn month_of(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    let table = [
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("mär", 3),
        ("apr", 4),
        ("may", 5),
        ("mai", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("okt", 10),
        ("nov", 11),
        ("dec", 12),
        ("dez", 12),
    ];
    table
        .iter()
        .find(|(p, _)| n.starts_with(p))
        .map(|&(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        find(text).iter().map(FoundEntity::key).collect()
    }

    #[test]
    fn ibans_are_found_only_with_valid_check_digits() {
        assert!(iban_valid("DE89370400440532013000"));
        assert!(iban_valid("GB82WEST12345698765432"));
        assert!(!iban_valid("DE89370400440532013001"));
        let k = keys("Pay to DE89 3704 0044 0532 0130 00 or GB82WEST12345698765432, not DE00123456781234567890.");
        assert_eq!(
            k,
            ["iban:DE89370400440532013000", "iban:GB82WEST12345698765432"]
        );
    }

    #[test]
    fn amounts_dates_emails_and_ids() {
        let text =
            "Invoice No. 4711-A from anna.Berg@Example.com, dated 2026-03-14: total EUR 1.234,50 \
                    (also $99.95 and 250 CHF), due 14 March 2026 or 01.04.2026; see PO-2026-0042.";
        let k = keys(text);
        for want in [
            "document_id:4711-A",
            "email:anna.berg@example.com",
            "date:2026-03-14",
            "amount:EUR 1234.50",
            "amount:USD 99.95",
            "amount:CHF 250",
            "date:2026-04-01",
            "document_id:PO-2026-0042",
        ] {
            assert!(k.contains(&want.to_string()), "{want} missing from {k:?}");
        }
        // An ungrouped amount is read whole, with or without decimals.
        for (text, want) in [
            ("total EUR 12480.00 due", "amount:EUR 12480.00"),
            ("total EUR 12480", "amount:EUR 12480"),
            ("CHF 1'250.50 net", "amount:CHF 1250.50"),
            ("12480,5 EUR", "amount:EUR 12480.5"),
        ] {
            assert_eq!(keys(text), [want], "{text}");
        }
        // 14 March 2026 is the same date as 2026-03-14: one entity.
        assert_eq!(k.iter().filter(|x| *x == "date:2026-03-14").count(), 1);
    }

    #[test]
    fn plain_text_has_no_entities_and_the_count_is_bounded() {
        assert!(keys("Nothing here but words, 42 apples and the year 2026.").is_empty());
        let many: String = (0..1000).map(|i| format!("u{i}@example.org ")).collect();
        assert_eq!(find(&many).len(), MAX_FOUND);
        // Runs of digits and long domains give bounded entities or none.
        let long = format!(
            "EUR {} and a@{}com",
            "9".repeat(100_000),
            "b.".repeat(100_000)
        );
        assert!(
            find(&long).iter().all(|e| e.value.len() <= 64),
            "{:?}",
            find(&long)
        );
        // Multi-byte text at the scan limit does not panic.
        let big = "ü".repeat(MAX_SCANNED_BYTES);
        assert!(find(&big).is_empty());
    }
}
