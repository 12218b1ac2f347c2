package main

// The scheduler's image is built from scratch (make image): it has no /etc/ssl, so crypto/x509
// would find no system roots and every HTTPS call the AWS SDK makes (EC2, pricing, SQS, SSM,
// IAM, STS) would fail with "certificate signed by unknown authority". This package embeds
// Mozilla's (NSS) root set and hands it to crypto/x509 as the fallback, used only where the
// system has no roots: a host or an image with a CA bundle (or SSL_CERT_FILE) keeps its own.
// The in-cluster API server connection is unaffected; it trusts the service account's CA.
// The set is pinned in go.mod; move it forward with
// `go get golang.org/x/crypto/x509roots/fallback@latest` when govulncheck or a CA change asks.
import _ "golang.org/x/crypto/x509roots/fallback"
