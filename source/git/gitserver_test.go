package git

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"gitsync.dev/gitsync/internal/gittest"
)

// gitHTTPServer is the shared loopback Git server (internal/gittest) over
// TLS, with optional basic auth, counting requests and response bytes.
type gitHTTPServer struct {
	*gittest.Server
	user, pass string
}

func newGitHTTPServer(t testing.TB, root, user, pass string) *gitHTTPServer {
	t.Helper()
	return &gitHTTPServer{Server: gittest.New(t, root, gittest.Options{TLS: true, User: user, Password: pass}), user: user, pass: pass}
}

// auth returns the credentials the server accepts.
func (s *gitHTTPServer) auth() *Auth {
	return &Auth{Username: s.user, Password: s.pass, CAData: s.CA}
}

// gitSSHServer is an in-test SSH server (golang.org/x/crypto/ssh) that runs
// git-upload-pack for repositories under root and accepts one client key.
type gitSSHServer struct {
	Addr       string
	KnownHosts []byte // known_hosts line for the host key
	ClientKey  []byte // PEM private key the server accepts
	uploads    atomic.Int64
}

func newGitSSHServer(t testing.TB, root string) *gitSSHServer {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	authorized, _ := ssh.NewPublicKey(clientPub)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(k.Marshal(), authorized.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("unknown key")
		},
	}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	s := &gitSSHServer{Addr: ln.Addr().String()}
	s.KnownHosts = []byte(knownhosts.Line([]string{s.Addr}, hostSigner.PublicKey()) + "\n")
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	s.ClientKey = pem.EncodeToMemory(block)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.serveConn(c, cfg, root) }()
		}
	}()
	return s
}

func (s *gitSSHServer) url(repo string) string { return "ssh://git@" + s.Addr + "/" + repo }

func (s *gitSSHServer) serveConn(c net.Conn, cfg *ssh.ServerConfig, root string) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.serveSession(ch, creqs, root)
	}
}

func (s *gitSSHServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, root string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			req.Reply(false, nil)
			return
		}
		repo, ok := strings.CutPrefix(payload.Command, "git-upload-pack ")
		if !ok {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		s.uploads.Add(1)
		code := runUploadPack(ch, filepath.Join(root, strings.Trim(repo, `'"/`)))
		status := make([]byte, 4)
		binary.BigEndian.PutUint32(status, uint32(code))
		ch.SendRequest("exit-status", false, status)
		return
	}
}

func runUploadPack(ch ssh.Channel, dir string) int {
	cmd := exec.Command("git-upload-pack", dir)
	cmd.Env = gittest.Env(dir)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() { io.Copy(stdin, ch); stdin.Close() }()
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}
