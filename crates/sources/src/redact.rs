//! What a remote server says, made fit to show: a server (or a proxy before it) may echo
//! the request — its `Authorization` header, an IMAP `LOGIN` line — in an error, and may
//! send any length of any bytes. [`Secrets::reason`] is the one function through which a
//! remote error becomes text, for answers, ledger lines and logs alike: one line, no control
//! characters, at most [`MAX_REASON_CHARS`] characters, every configured secret redacted in
//! each form it travels in.

use base64::Engine;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

use super::{Credentials, Source};

/// Longest reason kept from a remote error, in characters.
pub const MAX_REASON_CHARS: usize = 200;
/// Bytes of a remote error looked at, at most (the rest is not even scanned).
const MAX_SCANNED_BYTES: usize = 16 * 1024;
/// What a secret is replaced by.
const REDACTED: &str = "[redacted]";

/// The forms a source's secrets may come back in.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Longest first, so a form containing another is redacted whole.
    forms: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} forms)", self.forms.len())
    }
}

impl Secrets {
    /// Every secret `source` may send: its credentials' and the environment's (whichever
    /// the session uses), as written, percent-encoded, quoted as an IMAP `LOGIN` sends it,
    /// in base64, and `user:password` in base64 as HTTP Basic authentication sends it.
    pub fn of(source: &Source) -> Secrets {
        let c = &source.credentials;
        let var = Credentials::or_var;
        let secrets = [
            var(&c.secret_access_key, "AWS_SECRET_ACCESS_KEY"),
            var(&c.session_token, "AWS_SESSION_TOKEN"),
            var(&c.access_key_id, "AWS_ACCESS_KEY_ID"),
            var(&c.password, "INGEST_FTP_PASSWORD"),
            var(&c.password, "INGEST_WEBDAV_PASSWORD"),
            var(&c.password, "INGEST_IMAP_PASSWORD"),
            var(&c.token, "INGEST_WEBDAV_TOKEN"),
        ];
        let users = [
            source.url.user.clone(),
            var(&c.user, "INGEST_FTP_USER"),
            var(&c.user, "INGEST_WEBDAV_USER"),
            var(&c.user, "INGEST_IMAP_USER"),
        ];
        let mut out = Secrets::default();
        for secret in secrets.iter().flatten() {
            out.add(secret);
            for user in users.iter().flatten() {
                out.add_form(
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}")),
                );
            }
        }
        out.forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        out.forms.dedup();
        out
    }

    /// `secret` in each form it may travel in.
    fn add(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let encoded = utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string();
        self.add_form(encoded.to_ascii_lowercase());
        self.add_form(encoded);
        self.add_form(secret.replace('\\', "\\\\").replace('"', "\\\""));
        self.add_form(base64::engine::general_purpose::STANDARD.encode(secret));
        self.add_form(secret.to_string());
    }

    fn add_form(&mut self, form: String) {
        if !form.is_empty() {
            self.forms.push(form);
        }
    }

    /// `text` with every form of every secret replaced.
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for form in &self.forms {
            if text.contains(form.as_str()) {
                text = text.replace(form.as_str(), REDACTED);
            }
        }
        text
    }

    /// What a remote server said, fit to show (see the module's documentation).
    pub fn reason(&self, said: &str) -> String {
        let mut end = said.len().min(MAX_SCANNED_BYTES);
        while !said.is_char_boundary(end) {
            end -= 1;
        }
        let head = said.get(..end).unwrap_or_default();
        // Redacted as sent (a secret may hold spaces), and again once on one line.
        let once = self.redact(head);
        let line = once
            .split(|c: char| c.is_control() || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let joined = self.redact(&line);
        let mut out: String = joined.chars().take(MAX_REASON_CHARS).collect();
        if out.len() < joined.len() || end < said.len() {
            out.push('…');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        let mut s = Source::from(
            "webdav://files.example/docs"
                .parse::<super::super::SourceUrl>()
                .unwrap(),
        );
        s.credentials.user = Some("crew".into());
        s.credentials.password = Some("hun\"ter 2/x".into());
        s.credentials.secret_access_key = Some("wJalrXUtnFEMI/K7MDENG".into());
        s
    }

    #[test]
    fn every_form_of_a_secret_is_redacted_and_a_reason_is_one_short_line() {
        let secrets = Secrets::of(&source());
        let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
        let said = format!(
            "403 Forbidden\r\nAuthorization: Basic {}\n\tLOGIN \"crew\" \"hun\\\"ter 2/x\"\u{1b}[31m \
             key=wJalrXUtnFEMI%2FK7MDENG k2=wjalrxutnfemi%2fk7mdeng raw=hun\"ter 2/x b={} {}",
            b64("crew:hun\"ter 2/x"),
            b64("hun\"ter 2/x"),
            "x".repeat(5000)
        );
        let reason = secrets.reason(&said);
        for leaked in ["hun", "ter 2", "wJalr", "wjalr", &b64("crew:hun\"ter 2/x")] {
            assert!(!reason.contains(leaked), "{leaked} in {reason}");
        }
        assert!(
            reason.starts_with("403 Forbidden Authorization: Basic [redacted]"),
            "{reason}"
        );
        assert!(!reason.chars().any(char::is_control), "{reason}");
        assert!(reason.chars().count() <= MAX_REASON_CHARS + 1, "{reason}");
        assert!(reason.ends_with('…'));
        assert_eq!(Secrets::default().reason("plain"), "plain");
    }
}
