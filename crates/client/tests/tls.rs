//! TLS against `redis-server --tls-port` with a test CA: trusted CA, wrong CA, SNI name
//! override while dialling 127.0.0.1, client certificate, insecure mode; and the same
//! client against redline-server's TLS port (mutual TLS, expired and wrong-host
//! certificates).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use redline::{CaCerts, Client, ClientCert, Config, Error, TlsConfig};
use redline_testkit::{RedisServer, RedlineServer, TlsCerts};

fn tls_config(server: &RedisServer, tls: TlsConfig) -> Config {
    let mut cfg = Config::from_url(&format!("rediss://127.0.0.1:{}", server.port())).unwrap();
    cfg.tls = Some(tls);
    cfg
}

fn trusting(certs: &TlsCerts) -> TlsConfig {
    let mut tls = TlsConfig::default();
    tls.ca = Some(CaCerts::Pem(certs.ca_cert_pem().as_bytes().to_vec()));
    tls
}

#[tokio::test]
async fn trusted_ca_and_sni_override() {
    let certs = TlsCerts::generate().unwrap();
    let server = RedisServer::builder().tls(&certs).start().unwrap();

    // CA from a PEM string, name = the dialled IP.
    let client = Client::from_config(tls_config(&server, trusting(&certs)))
        .await
        .unwrap();
    client.set("k", "over tls").await.unwrap();
    assert_eq!(
        client.get("k").await.unwrap().as_deref(),
        Some(&b"over tls"[..])
    );

    // CA from a file, via the URL, with the certificate name given separately (SNI).
    let url = format!(
        "rediss://127.0.0.1:{}?ca_file={}&sni={}",
        server.port(),
        certs.ca_cert_path().display(),
        TlsCerts::SNI_NAME
    );
    let client = Client::connect(&url).await.unwrap();
    assert_eq!(client.ping().await.unwrap(), "PONG");

    // A name the certificate does not carry is refused.
    let mut tls = trusting(&certs);
    tls.server_name = Some("not-in-the-cert.test".into());
    let err = Client::from_config(tls_config(&server, tls))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}

#[tokio::test]
async fn wrong_ca_is_a_certificate_error() {
    let certs = TlsCerts::generate().unwrap();
    let other = TlsCerts::generate().unwrap();
    let server = RedisServer::builder().tls(&certs).start().unwrap();
    let err = Client::from_config(tls_config(&server, trusting(&other)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );

    // Without a CA the public roots are used, which do not know the test CA either.
    let err = Client::from_config(tls_config(&server, TlsConfig::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}

#[tokio::test]
async fn client_certificate_and_insecure_mode() {
    let certs = TlsCerts::generate().unwrap();
    let server = RedisServer::builder().tls(&certs).start().unwrap();

    let mut tls = trusting(&certs);
    tls.client_cert = Some(ClientCert {
        cert_pem: certs.client_cert_pem().as_bytes().to_vec(),
        key_pem: certs.client_key_pem().as_bytes().to_vec(),
    });
    let client = Client::from_config(tls_config(&server, tls)).await.unwrap();
    assert_eq!(client.ping().await.unwrap(), "PONG");

    let mut tls = TlsConfig::default();
    tls.insecure = true;
    let client = Client::from_config(tls_config(&server, tls)).await.unwrap();
    assert_eq!(client.ping().await.unwrap(), "PONG");

    // Bad PEM input is a configuration error before any connection.
    let mut tls = TlsConfig::default();
    tls.ca = Some(CaCerts::Pem(b"not a pem".to_vec()));
    let err = Client::from_config(tls_config(&server, tls))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_callers_over_tls() {
    let certs = TlsCerts::generate().unwrap();
    let server = RedisServer::builder().tls(&certs).start().unwrap();
    let client = Client::from_config(tls_config(&server, trusting(&certs)))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for t in 0..200 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                let v = format!("{t}:{i}");
                client.set(format!("k{t}"), &v).await.unwrap();
                assert_eq!(client.get(format!("k{t}")).await.unwrap(), Some(v.into()));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn redline_config(port: u16, tls: TlsConfig) -> Config {
    let mut cfg = Config::from_url(&format!("rediss://127.0.0.1:{port}")).unwrap();
    cfg.tls = Some(tls);
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redline_server_over_tls() {
    let certs = TlsCerts::generate().unwrap();
    let server = RedlineServer::builder().tls(&certs).start().unwrap();
    let port = server.port();

    let client = Client::from_config(redline_config(port, trusting(&certs)))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for t in 0..50 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                let v = format!("{t}:{i}");
                client.set(format!("k{t}"), &v).await.unwrap();
                assert_eq!(client.get(format!("k{t}")).await.unwrap(), Some(v.into()));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    // The certificate's other name, given as SNI; a name it does not carry is refused.
    let mut tls = trusting(&certs);
    tls.server_name = Some(TlsCerts::SNI_NAME.into());
    let client = Client::from_config(redline_config(port, tls))
        .await
        .unwrap();
    assert_eq!(client.ping().await.unwrap(), "PONG");
    let mut tls = trusting(&certs);
    tls.server_name = Some("not-in-the-cert.test".into());
    let err = Client::from_config(redline_config(port, tls))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");

    // Required client certificates: with one it connects, without one it is refused.
    assert_eq!(
        server
            .cmd(&["CONFIG", "SET", "tls-auth-clients", "yes"])
            .unwrap(),
        redline_testkit::Reply::Simple("OK".into())
    );
    let mut tls = trusting(&certs);
    tls.client_cert = Some(ClientCert {
        cert_pem: certs.client_cert_pem().as_bytes().to_vec(),
        key_pem: certs.client_key_pem().as_bytes().to_vec(),
    });
    let client = Client::from_config(redline_config(port, tls))
        .await
        .unwrap();
    assert_eq!(client.ping().await.unwrap(), "PONG");
    let refused = Client::from_config(redline_config(port, trusting(&certs))).await;
    assert!(refused.is_err(), "connected without a client certificate");
}

#[tokio::test]
async fn expired_certificate_from_redline_server_is_a_tls_error() {
    let certs = TlsCerts::generate().unwrap();
    let (cert, key) = certs
        .issue_server_cert("expired", &["127.0.0.1", "localhost"], true)
        .unwrap();
    let port = redline_testkit::reserve_port().unwrap();
    let path = |p: &std::path::Path| p.display().to_string();
    // Plain port for the kit's readiness check, the bad certificate on the TLS port.
    let _server = RedlineServer::builder()
        .args(["--tls-port".to_string(), port.to_string()])
        .args(["--tls-cert-file".to_string(), path(&cert)])
        .args(["--tls-key-file".to_string(), path(&key)])
        .args(["--tls-auth-clients", "no"])
        .start()
        .unwrap();
    let err = Client::from_config(redline_config(port, trusting(&certs)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
    assert!(err.to_string().to_lowercase().contains("expired"), "{err}");
}
