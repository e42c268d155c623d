package p4rtc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
)

// These tests run the client against the real P4Runtime server of the Go
// target (p4/p4rt) over gRPC on loopback.

type testSwitch struct {
	srv  *p4rt.Server
	gs   *grpc.Server
	addr string
}

func startSwitch(t *testing.T, addr string, opts ...grpc.ServerOption) *testSwitch {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a, b := netio.Pipe()
	t.Cleanup(func() { b.Close() })
	s := &testSwitch{srv: p4rt.New(p4rt.Options{DeviceID: 1, Ports: map[uint32]netio.Port{1: a}}), gs: grpc.NewServer(opts...), addr: lis.Addr().String()}
	s.srv.Register(s.gs)
	s.srv.Start()
	go s.gs.Serve(lis)
	t.Cleanup(s.stop)
	return s
}

func (s *testSwitch) stop() { s.gs.Stop(); s.srv.Close() }

func swordbox(t *testing.T) ([]byte, *p4cfg.P4Info) {
	t.Helper()
	src, err := os.ReadFile("../../p4/swordbox.p4")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := target.Compile("swordbox.p4", src)
	if err != nil {
		t.Fatal(err)
	}
	return src, prog.P4Info()
}

// roles records a client's role changes.
type roles struct {
	mu  sync.Mutex
	seq []Role
}

func (r *roles) add(x Role) { r.mu.Lock(); r.seq = append(r.seq, x); r.mu.Unlock() }

func dial(t *testing.T, addr string, id uint64, edit func(*Options)) *Client {
	t.Helper()
	o := Options{Addr: addr, DeviceID: 1, ElectionID: ElectionID{Low: id}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	if edit != nil {
		edit(&o)
	}
	c, err := Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitRole(t *testing.T, c *Client, r Role) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitRole(ctx, r); err != nil {
		t.Fatal(err)
	}
}

func codeOf(err error) codes.Code {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok {
			return st.Code()
		}
	}
	return codes.Unknown
}

func TestArbitrationAndFailover(t *testing.T) {
	sw := startSwitch(t, "")
	var seenB roles
	a := dial(t, sw.addr, 2, nil)
	waitRole(t, a, Primary)
	b := dial(t, sw.addr, 1, func(o *Options) { o.Takeover = true; o.OnRole = seenB.add })
	waitRole(t, b, Backup)
	if a.Role() != Primary {
		t.Fatal("a lower election ID displaced the primary")
	}
	// A backup cannot write nor send packets.
	src, info := swordbox(t)
	if err := b.SetPipeline(context.Background(), info, src); codeOf(err) != codes.PermissionDenied {
		t.Fatalf("backup SetPipeline: %v", err)
	}
	if err := b.PacketOut([]byte{1}, nil); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("backup PacketOut: %v", err)
	}
	// The primary dies: the backup raises its ID above 2 and takes over.
	a.Close()
	waitRole(t, b, Primary)
	if e := b.Election(); e != (ElectionID{Low: 3}) {
		t.Fatalf("election id after takeover %v, want 3", e)
	}
	if err := b.SetPipeline(context.Background(), info, src); err != nil {
		t.Fatalf("new primary SetPipeline: %v", err)
	}
	// The old primary comes back with its old ID: it is now the backup.
	a2 := dial(t, sw.addr, 2, nil)
	waitRole(t, a2, Backup)
	if b.Role() != Primary {
		t.Fatal("the returning controller displaced the new primary")
	}
	seenB.mu.Lock()
	defer seenB.mu.Unlock()
	if len(seenB.seq) < 2 || seenB.seq[0] != Backup || seenB.seq[len(seenB.seq)-1] != Primary {
		t.Fatalf("backup's role changes %v", seenB.seq)
	}
}

func TestWithoutTakeoverABackupWaits(t *testing.T) {
	sw := startSwitch(t, "")
	a := dial(t, sw.addr, 2, nil)
	waitRole(t, a, Primary)
	b := dial(t, sw.addr, 1, nil)
	waitRole(t, b, Backup)
	a.Close()
	// A third controller with a higher ID is the one that becomes primary.
	c := dial(t, sw.addr, 5, nil)
	waitRole(t, c, Primary)
	if b.Role() != Backup || b.Election() != (ElectionID{Low: 1}) {
		t.Fatalf("backup without takeover: role %s id %v", b.Role(), b.Election())
	}
}

func TestReconnectsWithBackoff(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	var seen roles
	c := dial(t, addr, 1, func(o *Options) { o.OnRole = seen.add })
	time.Sleep(50 * time.Millisecond) // a few failed attempts against nothing
	if c.Role() != Disconnected {
		t.Fatalf("role %s with no switch", c.Role())
	}
	sw := startSwitch(t, addr)
	waitRole(t, c, Primary)
	sw.stop()
	waitRole(t, c, Disconnected)
	startSwitch(t, addr)
	waitRole(t, c, Primary)
}

func TestPipelineWriteReadInBatches(t *testing.T) {
	sw := startSwitch(t, "")
	c := dial(t, sw.addr, 1, func(o *Options) { o.MaxBatch = 3 })
	waitRole(t, c, Primary)
	ctx := context.Background()
	src, info := swordbox(t)
	if err := c.SetPipeline(ctx, info, src); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetP4Info(ctx)
	if err != nil || len(got.GetTables()) != len(info.GetTables()) {
		t.Fatalf("GetP4Info: %v", err)
	}
	s, err := NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	var ups []*p4.Update
	for i := 0; i < 10; i++ {
		e, err := s.TableEntry("forward", []Match{Exact("hdr.ethernet.dst_addr", []byte{2, 0, 0, 0, 0, byte(i)})}, "set_egress", P("port", uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, Insert(TableEntity(e)))
	}
	if err := c.Write(ctx, ups); err != nil {
		t.Fatal(err)
	}
	q, _ := s.TableRead("forward")
	ents, err := c.Read(ctx, q)
	if err != nil || len(ents) != 10 {
		t.Fatalf("read %d entries: %v", len(ents), err)
	}
	// A batch with a duplicate: the error names the failed update.
	err = c.Write(ctx, ups[4:6])
	if err == nil || !strings.Contains(err.Error(), "update 0: ALREADY_EXISTS") || !strings.Contains(err.Error(), "update 1: ALREADY_EXISTS") {
		t.Fatalf("duplicate inserts: %v", err)
	}
}

func TestObserverReadsWithoutArbitrating(t *testing.T) {
	sw := startSwitch(t, "")
	src, _ := swordbox(t)
	if err := sw.srv.LoadPipeline("swordbox.p4", src); err != nil {
		t.Fatal(err)
	}
	a := dial(t, sw.addr, 1, nil)
	waitRole(t, a, Primary)
	o := dial(t, sw.addr, 0, func(o *Options) { o.Observer = true })
	info, err := o.GetP4Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSchema(info)
	q, _ := s.RegisterRead("tail_valid", 0)
	if ents, err := o.Read(context.Background(), q); err != nil || len(ents) != 1 {
		t.Fatalf("observer read: %d entities, %v", len(ents), err)
	}
	if o.Role() != Disconnected || a.Role() != Primary {
		t.Fatalf("observer %s, primary %s", o.Role(), a.Role())
	}
}

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, into dir.
func pki(t *testing.T, dir string) (caPEM, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "swordbox test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, ip bool) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if ip {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kd)
	}
	srvCert, srvKey = leaf(2, "switch", x509.ExtKeyUsageServerAuth, true)
	cliCert, cliKey = leaf(3, "ctrl", x509.ExtKeyUsageClientAuth, false)
	return write("ca.pem", "CERTIFICATE", caDER), srvCert, srvKey, cliCert, cliKey
}

func TestMutualTLS(t *testing.T) {
	ca, sc, sk, cc, ck := pki(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(sc, sk)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(ca)
	pool.AppendCertsFromPEM(caPEM)
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	sw := startSwitch(t, "", grpc.Creds(creds))

	good := dial(t, sw.addr, 1, func(o *Options) { o.TLS = &TLS{CAFile: ca, CertFile: cc, KeyFile: ck} })
	waitRole(t, good, Primary)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	noCert := dial(t, sw.addr, 2, func(o *Options) { o.TLS = &TLS{CAFile: ca}; o.Observer = true })
	if _, err := noCert.GetP4Info(ctx); codeOf(err) != codes.Unavailable {
		t.Fatalf("client without a certificate: %v, want UNAVAILABLE", err)
	}
	plain := dial(t, sw.addr, 3, func(o *Options) { o.Observer = true })
	if _, err := plain.GetP4Info(ctx); codeOf(err) != codes.Unavailable {
		t.Fatalf("insecure client against TLS: %v, want UNAVAILABLE", err)
	}
	if _, err := Dial(Options{Addr: sw.addr, TLS: &TLS{CAFile: filepath.Join(t.TempDir(), "nope.pem")}}); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
}
