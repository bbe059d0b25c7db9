//! TLS to the shared catalog's PostgreSQL (issue 56): a throw-away cluster that takes TCP
//! connections with TLS only (`ingest_index::testkit::PostgresServer::start_tls`), its certificate
//! made here by a throw-away authority with the `openssl` command; a second authority that
//! signed nothing of the server's.
//!
//! Prints `SKIPPED` and passes when PostgreSQL cannot start, as the other catalog tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use ingest::CatalogUrl;
use ingest_index::prelude::*;
use ingest_index::testkit::{catalog_tls_version, PostgresServer};
use ingest_index::PgCatalog;

/// Run `openssl ARGS` in `dir`; its exit code and output said when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (Debian `openssl`) makes the test's certificates");
    assert!(
        out.status.success(),
        "openssl {args:?}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A throw-away authority `NAME.pem` (and its key) in `dir`.
fn authority(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=ingest test authority {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    dir.join(format!("{name}.pem"))
}

/// The server's certificate for `localhost` and `127.0.0.1`, signed by authority `ca`:
/// (certificate, key).
fn server_certificate(dir: &Path, ca: &str) -> (PathBuf, PathBuf) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n\
         basicConstraints = CA:FALSE\n\
         keyUsage = critical, digitalSignature\n\
         extendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    (dir.join("server.crt"), dir.join("server.key"))
}

/// Open the catalog at `url`: the catalog, or the error's text.
fn open(url: &str, data_dir: &Path) -> Result<PgCatalog, String> {
    let url: CatalogUrl = url.parse().map_err(|e| format!("parse: {e}"))?;
    PgCatalog::open(&url, data_dir).map_err(|e| e.to_string())
}

/// The URL of `db` (a database of the TLS server, `postgres://ingest@127.0.0.1:PORT/NAME`)
/// with a password (which no error may show), another host and `params`.
fn with(db: &str, host: &str, params: &str) -> String {
    let url = db
        .replacen("ingest@127.0.0.1", &format!("ingest:sekrit@{host}"), 1)
        .to_string();
    if params.is_empty() {
        url
    } else {
        format!("{url}?{params}")
    }
}

#[test]
fn the_postgres_catalog_speaks_tls_and_verifies_the_server() {
    let certs = tempfile::tempdir().unwrap();
    let ca = authority(certs.path(), "ca");
    let other_ca = authority(certs.path(), "other");
    let (cert, key) = server_certificate(certs.path(), "ca");
    let Some(pg) = PostgresServer::start_tls(&cert, &key) else {
        return;
    };
    let db = pg.database("tls");
    let ca = ca.display();
    let other_ca = other_ca.display();
    let data = tempfile::tempdir().unwrap();

    // (a) verify-full with the authority: the catalog writes and reads, over TLS (as the
    // server sees the connection).
    let full = with(
        &db,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let catalog = open(&full, data.path()).unwrap();
    let scope = ingest::Scope::user("tls");
    let entry = ingest_index::CatalogEntry::indexed("/t/a.txt", None, "h", 3, 4, 5);
    catalog.put(&scope, entry.clone());
    catalog.save().unwrap();
    assert_eq!(catalog.get(&scope, "/t/a.txt"), Some(entry.clone()));
    let version = catalog_tls_version(&catalog).unwrap();
    assert!(
        version.as_deref().is_some_and(|v| v.starts_with("TLSv1.")),
        "the server saw no TLS: {version:?}"
    );
    // By the name `localhost`, which the certificate holds too; `sslrootcert` alone asks for
    // verify-full.
    let by_name = open(
        &with(&db, "localhost", &format!("sslrootcert={ca}")),
        data.path(),
    )
    .unwrap();
    assert_eq!(by_name.get(&scope, "/t/a.txt"), Some(entry.clone()));
    assert!(catalog_tls_version(&by_name).unwrap().is_some());

    // (e) require: TLS without verifying (no authority given: the platform's store does not
    // hold this one); with sslrootcert, require verifies the chain (as libpq).
    let require = open(&with(&db, "127.0.0.1", "sslmode=require"), data.path()).unwrap();
    assert_eq!(require.get(&scope, "/t/a.txt"), Some(entry.clone()));
    assert!(catalog_tls_version(&require).unwrap().is_some());
    // verify-ca: the chain, not the name.
    let verify_ca = open(
        &with(
            &db,
            "db.invalid",
            &format!("hostaddr=127.0.0.1&sslmode=verify-ca&sslrootcert={ca}"),
        ),
        data.path(),
    )
    .unwrap();
    assert_eq!(verify_ca.get(&scope, "/t/a.txt"), Some(entry));

    // The refusals, at once (each waits for the pool's connection timeout).
    let refused = [
        // (b) no sslmode on loopback (no TLS) and sslmode=disable: the server refuses.
        (
            with(&db, "127.0.0.1", ""),
            "refuses connections without TLS",
        ),
        (
            with(&db, "127.0.0.1", "sslmode=disable"),
            "refuses connections without TLS",
        ),
        // (c) another authority: the certificate is not trusted.
        (
            with(
                &db,
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={other_ca}"),
            ),
            "the certificate of 127.0.0.1 was not trusted",
        ),
        (
            with(
                &db,
                "127.0.0.1",
                &format!("sslmode=require&sslrootcert={other_ca}"),
            ),
            "the certificate of 127.0.0.1 was not trusted",
        ),
        // The platform's store does not hold the throw-away authority either.
        (
            with(&db, "127.0.0.1", "sslmode=verify-full"),
            "no authority of the platform's trust store signed it",
        ),
        // (d) verify-full by a name the certificate does not hold.
        (
            with(
                &db,
                "db.invalid",
                &format!("hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={ca}"),
            ),
            "the certificate of db.invalid does not name db.invalid but",
        ),
    ];
    let errors: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = refused
            .iter()
            .map(|(url, _)| {
                let dir = tempfile::tempdir().unwrap();
                s.spawn(move || match open(url, dir.path()) {
                    Ok(_) => format!("{url}: connected"),
                    Err(e) => e,
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for ((url, says), err) in refused.iter().zip(&errors) {
        assert!(err.contains(says), "{url}: {err}");
        assert!(!err.contains("sekrit"), "{url}: {err}");
    }
    eprintln!("the refusals said:\n{}", errors.join("\n"));
}

#[test]
fn a_server_without_tls_is_refused_when_tls_is_asked_for() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let db = pg.database("no_tls");
    let data = tempfile::tempdir().unwrap();
    let url = with(&db, "127.0.0.1", "sslmode=require");
    let err = open(&url, data.path()).map(|_| ()).unwrap_err();
    assert!(
        err.contains("127.0.0.1 refused TLS") && err.contains("sslmode=require requires it"),
        "{err}"
    );
    assert!(!err.contains("sekrit"), "{err}");
    // As ever: no sslmode on loopback is no TLS.
    let plain = open(&with(&db, "127.0.0.1", ""), data.path()).unwrap();
    assert_eq!(catalog_tls_version(&plain).unwrap(), None);
}
