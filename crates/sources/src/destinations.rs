//! Where a source may connect: the destination policy of one deployment.
//!
//! A source's URL is written by the operator (a `[[source]]` of the configuration file, the
//! command line's argument, `serve --watch URL`), and so is an S3 endpoint
//! (`credentials.endpoint`, `AWS_ENDPOINT_URL`): the host each names — that exact name or
//! IP address — is allowed, whatever it resolves to. Every other destination (which, with
//! redirects never followed, only a provider's default endpoint can be) is checked by its
//! resolved addresses at connect time, and refused when it falls in a range denied by
//! default — loopback, link-local (169.254.169.254 included), private (RFC 1918, `fc00::/7`,
//! `100.64.0.0/10`), unspecified, multicast, broadcast and reserved — unless the
//! deployment's `allow` list names it. The `deny` list refuses what it names always, an
//! operator-named host too.
//!
//! ```toml
//! [source_destinations]
//! allow = ["10.20.0.0/16", "files.internal"]   # CIDR ranges, addresses or host names
//! deny = ["203.0.113.7"]
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Most entries of each list.
const MAX_ENTRIES: usize = 1000;

/// The deployment's lists of destinations, as configured (`[source_destinations]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Destinations {
    /// Destinations allowed though a default range would deny them: CIDR ranges
    /// (`10.0.0.0/8`, `fd00::/8`), addresses or host names (exact, case-insensitive).
    pub allow: Vec<String>,
    /// Destinations always refused, operator-named hosts too (same forms).
    pub deny: Vec<String>,
}

/// One entry of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A range: its first address and prefix length.
    Net(IpAddr, u8),
    /// A host name, lowercase.
    Name(String),
}

impl Entry {
    fn parse(text: &str) -> Result<Entry, String> {
        let bad = || {
            format!(
                "source_destinations: {:?} is no CIDR range, address or host name",
                text.chars().take(80).collect::<String>()
            )
        };
        let text = text.trim();
        if let Some((ip, len)) = text.split_once('/') {
            let ip: IpAddr = ip.parse().map_err(|_| bad())?;
            let len: u8 = len.parse().map_err(|_| bad())?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            if len > max {
                return Err(bad());
            }
            return Ok(Entry::Net(canonical(ip), len));
        }
        if let Ok(ip) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
            let ip = canonical(ip);
            return Ok(Entry::Net(ip, if ip.is_ipv4() { 32 } else { 128 }));
        }
        let name_ok = !text.is_empty()
            && text.len() <= 253
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !name_ok {
            return Err(bad());
        }
        Ok(Entry::Name(text.to_ascii_lowercase()))
    }

    fn holds_ip(&self, ip: IpAddr) -> bool {
        match self {
            Entry::Net(net, len) => in_net(ip, *net, *len),
            Entry::Name(_) => false,
        }
    }

    fn holds_name(&self, name: &str) -> bool {
        match self {
            Entry::Name(n) => n.eq_ignore_ascii_case(name),
            Entry::Net(..) => name
                .trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .is_ok_and(|ip| self.holds_ip(canonical(ip))),
        }
    }
}

impl Destinations {
    /// Whether every entry parses (the configuration is refused otherwise).
    pub fn check(&self) -> Result<(), String> {
        self.compile(&[]).map(|_| ())
    }

    /// The policy of one source: these lists, and the hosts its operator named.
    pub(super) fn compile(&self, named: &[String]) -> Result<Arc<Policy>, String> {
        if self.allow.len() > MAX_ENTRIES || self.deny.len() > MAX_ENTRIES {
            return Err(format!(
                "source_destinations: at most {MAX_ENTRIES} entries in each list"
            ));
        }
        let list = |l: &[String]| {
            l.iter()
                .map(|e| Entry::parse(e))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Arc::new(Policy {
            allow: list(&self.allow)?,
            deny: list(&self.deny)?,
            named: named
                .iter()
                .map(|h| Entry::parse(h))
                .collect::<Result<_, _>>()?,
        }))
    }
}

/// A source's destination policy, compiled.
#[derive(Debug, Default)]
pub(super) struct Policy {
    allow: Vec<Entry>,
    deny: Vec<Entry>,
    /// The hosts the operator named (the source's, the S3 endpoint's).
    named: Vec<Entry>,
}

impl Policy {
    /// Whether the host `name` (a name, or an address as a URL writes it) was named by the
    /// operator, or is allowed by name: then what it resolves to is not checked against
    /// the default ranges.
    pub(super) fn trusts_name(&self, name: &str) -> bool {
        self.named
            .iter()
            .chain(&self.allow)
            .any(|e| e.holds_name(name))
    }

    /// Refuse the host `name` before anything is resolved: when the deny list names it, or
    /// when it is an address that [`Policy::check_ip`] refuses.
    pub(super) fn check_host(&self, name: &str) -> Result<(), String> {
        if let Ok(ip) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
            return self.check_ip(ip, self.trusts_name(name));
        }
        if self.deny.iter().any(|e| e.holds_name(name)) {
            return Err(format!(
                "destination refused: {name} is denied by this deployment"
            ));
        }
        Ok(())
    }

    /// Refuse the address `ip` (resolved from a host that `trusted` says was named or
    /// allowed, or not): the deny list always, then the default ranges unless it is trusted
    /// or in the allow list.
    pub(super) fn check_ip(&self, ip: IpAddr, trusted: bool) -> Result<(), String> {
        let ip = canonical(ip);
        if self.deny.iter().any(|e| e.holds_ip(ip)) {
            return Err(format!(
                "destination refused: {ip} is denied by this deployment"
            ));
        }
        if trusted || self.allow.iter().any(|e| e.holds_ip(ip)) {
            return Ok(());
        }
        match denied_by_default(ip) {
            Some(range) => Err(format!(
                "destination refused: {ip} is {range}, not named by the source's URL nor allowed by source_destinations"
            )),
            None => Ok(()),
        }
    }
}

/// The addresses of `host` (a name, or an address as a URL writes it) at `port` that
/// `policy` allows, resolved now; an error when none is.
pub(super) async fn resolve(
    policy: &Policy,
    host: &str,
    port: u16,
) -> Result<Vec<std::net::SocketAddr>, String> {
    policy.check_host(host)?;
    let trusted = policy.trusts_name(host);
    let found = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut refused = None;
    let kept: Vec<std::net::SocketAddr> = found
        .filter(|a| match policy.check_ip(a.ip(), trusted) {
            Ok(()) => true,
            Err(e) => {
                refused.get_or_insert(e);
                false
            }
        })
        .collect();
    if kept.is_empty() {
        return Err(refused.unwrap_or_else(|| format!("{host}: no address")));
    }
    Ok(kept)
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`, `::127.0.0.1`, `64:ff9b::7f00:1`)
/// as the IPv4 address it reaches.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let [s0, s1, s2, s3, s4, s5, s6, s7] = v6.segments();
            // NAT64 (64:ff9b::/96) and the deprecated IPv4-compatible form (::a.b.c.d, not
            // :: and ::1).
            let head = [s0, s1, s2, s3, s4, s5];
            let nat64 = head == [0x64, 0xff9b, 0, 0, 0, 0];
            let compatible = head == [0; 6] && (s6 != 0 || s7 > 1);
            if nat64 || compatible {
                let [a, b] = s6.to_be_bytes();
                let [c, d] = s7.to_be_bytes();
                return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// Whether `ip` is in the range `net/len`.
fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// The default-denied range `ip` is in, named; `None` for a public address.
fn denied_by_default(ip: IpAddr) -> Option<&'static str> {
    let v4 = |a: [u8; 4], len| in_net(ip, IpAddr::V4(Ipv4Addr::from(a)), len);
    let v6 = |net: Ipv6Addr, len| in_net(ip, IpAddr::V6(net), len);
    let ranges: [(bool, &'static str); 15] = [
        (ip.is_loopback(), "a loopback address"),
        (ip.is_unspecified(), "the unspecified address"),
        (ip.is_multicast(), "a multicast address"),
        (v4([0, 0, 0, 0], 8), "in 0.0.0.0/8 (this network)"),
        (v4([10, 0, 0, 0], 8), "a private address (10.0.0.0/8)"),
        (v4([172, 16, 0, 0], 12), "a private address (172.16.0.0/12)"),
        (
            v4([192, 168, 0, 0], 16),
            "a private address (192.168.0.0/16)",
        ),
        (
            v4([100, 64, 0, 0], 10),
            "a shared (CGNAT) address (100.64.0.0/10)",
        ),
        (
            v4([169, 254, 0, 0], 16),
            "a link-local address (169.254.0.0/16)",
        ),
        (
            v4([192, 0, 0, 0], 24),
            "an IETF-reserved address (192.0.0.0/24)",
        ),
        (
            v4([198, 18, 0, 0], 15),
            "a benchmarking address (198.18.0.0/15)",
        ),
        (
            v4([240, 0, 0, 0], 4),
            "a reserved or broadcast address (240.0.0.0/4)",
        ),
        (
            v6(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
            "a unique-local address (fc00::/7)",
        ),
        (
            v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
            "a link-local address (fe80::/10)",
        ),
        (
            v6(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
            "a site-local address (fec0::/10)",
        ),
    ];
    ranges.iter().find(|(hit, _)| *hit).map(|(_, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn unnamed_destinations_in_internal_ranges_are_refused_and_named_ones_allowed() {
        let lists = Destinations {
            allow: vec!["10.20.0.0/16".into(), "files.internal".into()],
            deny: vec!["203.0.113.7".into(), "evil.example".into()],
        };
        let p = lists
            .compile(&["127.0.0.1".into(), "dav.local".into()])
            .unwrap();
        for refused in [
            "127.0.0.2",
            "::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "169.254.169.254",
            "10.0.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "255.255.255.255",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "203.0.113.7",
        ] {
            let e = p.check_ip(ip(refused), false).unwrap_err();
            assert!(e.starts_with("destination refused"), "{refused}: {e}");
        }
        for allowed in ["93.184.216.34", "2606:4700::1111", "10.20.3.4"] {
            assert!(p.check_ip(ip(allowed), false).is_ok(), "{allowed}");
        }
        // The operator's own host: its literal, and whatever a named host resolves to.
        assert!(p.check_host("127.0.0.1").is_ok());
        assert!(
            p.check_host("127.0.0.2").is_err(),
            "only the exact address named"
        );
        assert!(p.check_host("[::1]").is_err());
        assert!(p.trusts_name("DAV.local") && p.trusts_name("files.internal"));
        assert!(!p.trusts_name("localhost"));
        assert!(p.check_ip(ip("10.0.0.1"), true).is_ok());
        // The deny list wins over everything.
        assert!(p.check_ip(ip("203.0.113.7"), true).is_err());
        assert!(p.check_host("EVIL.example").is_err());
        assert!(p.check_host("public.example").is_ok());
    }

    #[test]
    fn a_list_entry_that_is_no_range_address_or_name_is_refused() {
        for bad in ["10.0.0.0/33", "::/129", "a b", "", "x/8", "http://h/"] {
            let lists = Destinations {
                allow: vec![bad.into()],
                deny: vec![],
            };
            assert!(lists.check().is_err(), "{bad:?}");
        }
        let fine = Destinations {
            allow: vec!["fd00::/8".into(), "[::1]".into(), "host-1.example".into()],
            deny: vec!["0.0.0.0/0".into()],
        };
        assert!(fine.check().is_ok());
    }
}
