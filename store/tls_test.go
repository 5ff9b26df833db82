package store

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
)

// rediss:// speaks TLS and verifies the server: against a real
// redis-server with a certificate of a test CA, the CA given opens the
// store, the system's roots do not.
func TestRedisTLS(t *testing.T) {
	bin := replicatest.Need(t, "redis-server", "redis-server")
	dir := t.TempDir()
	caCert, caKey := newCert(t, nil, nil, "test CA")
	srvCert, srvKey := newCert(t, caCert, caKey, "127.0.0.1")
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	caPath := write("ca.pem", "CERTIFICATE", caCert.Raw)
	port := replicatest.FreePort(t)
	replicatest.Start(t, exec.Command(bin, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", write("srv.pem", "CERTIFICATE", srvCert.Raw), "--tls-key-file", write("srv.key", "EC PRIVATE KEY", keyDER),
		"--tls-ca-cert-file", caPath, "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", dir),
		"Ready to accept connections", 20*time.Second, nil)
	url := "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0"
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	ctx := context.Background()
	s, err := OpenRedis(ctx, url, RedisOptions{RootCAs: pool})
	if err != nil {
		t.Fatalf("rediss with the CA: %v", err)
	}
	defer s.Close()
	if err := s.Put(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRedis(ctx, url, RedisOptions{Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("rediss without the CA: %v, want a certificate error", err)
	}
	if _, err := OpenRedis(ctx, "redis://127.0.0.1:"+strconv.Itoa(port)+"/0", RedisOptions{Timeout: time.Second}); err == nil {
		t.Fatal("plain redis:// to a TLS port opened")
	}
}

// newCert is a certificate for name signed by parent (nil: self-signed CA).
func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP(name)}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
