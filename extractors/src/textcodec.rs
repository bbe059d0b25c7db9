//! Turning text bytes into a `String`: BOM-aware, never failing.

/// The decoded text and the name of the encoding it was read as.
pub(crate) struct Decoded {
    pub text: String,
    pub encoding: &'static str,
}

/// Decode `bytes` as UTF-8 (BOM stripped) or UTF-16 (with a BOM); anything that is not valid
/// UTF-8 is read as Windows-1252, which maps every byte to a character.
pub(crate) fn decode(bytes: &[u8]) -> Decoded {
    if let Some((enc, bom_len)) = encoding_rs::Encoding::for_bom(bytes) {
        let body = bytes.get(bom_len..).unwrap_or(&[]);
        let (text, _) = enc.decode_without_bom_handling(body);
        return Decoded {
            text: normalize_newlines(text.into_owned()),
            encoding: enc.name(),
        };
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Decoded {
            text: normalize_newlines(s.to_string()),
            encoding: "UTF-8",
        },
        Err(_) => {
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes);
            Decoded {
                text: normalize_newlines(text.into_owned()),
                encoding: "windows-1252",
            }
        }
    }
}

/// CRLF and lone CR become LF, so line numbers agree with what an editor shows.
fn normalize_newlines(s: String) -> String {
    if !s.contains('\r') {
        return s;
    }
    s.replace("\r\n", "\n").replace('\r', "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_boms_and_falls_back_to_cp1252() {
        assert_eq!(decode(b"\xEF\xBB\xBFhi").text, "hi");
        assert_eq!(decode(b"\xFF\xFEh\0i\0").text, "hi");
        let d = decode(b"caf\xE9");
        assert_eq!(d.text, "café");
        assert_eq!(d.encoding, "windows-1252");
        assert_eq!(decode(b"a\r\nb\rc").text, "a\nb\nc");
    }
}
