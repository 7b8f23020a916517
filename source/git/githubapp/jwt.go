package githubapp

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// JWT lifetimes: GitHub refuses an exp more than 10 minutes after iat's
// moment of issue, and a clock a little ahead of GitHub's would make a
// JWT issued "now" not yet valid.
const (
	jwtBackdate = 60 * time.Second
	jwtLifetime = 9 * time.Minute
)

// parseKey reads a PEM RSA private key, PKCS #1 (the format GitHub hands
// out) or PKCS #8. Its errors never carry key material.
func parseKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("it holds no PEM block (want the .pem file GitHub generated, starting with -----BEGIN RSA PRIVATE KEY-----)")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("its RSA PRIVATE KEY block does not parse")
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("its PRIVATE KEY block does not parse")
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("it is a %T key; GitHub Apps sign with RSA", k)
		}
		return rk, nil
	}
	return nil, fmt.Errorf("its PEM block is %q, not an RSA private key", block.Type)
}

// signJWT returns the app's JWT for the moment now: RS256 over
// {"iat","exp","iss"}, iss being the app id (or client id) as given.
func signJWT(key *rsa.PrivateKey, appID string, now time.Time) (string, error) {
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(struct {
		IssuedAt  int64  `json:"iat"`
		ExpiresAt int64  `json:"exp"`
		Issuer    string `json:"iss"`
	}{now.Add(-jwtBackdate).Unix(), now.Add(jwtLifetime).Unix(), appID})
	if err != nil {
		return "", err
	}
	signing := header + "." + base64.RawURLEncoding.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", errors.New("signing the app's JWT failed")
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
