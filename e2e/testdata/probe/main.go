// Command probe runs in a pod on the end-to-end node and proves the pod's
// network and credentials: it reaches the apiserver through the `kubernetes`
// Service's ClusterIP, verifies it with the cluster CA from its token
// volume, asks who its ServiceAccount token says it is and prints that.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	if err := run(); err != nil {
		fmt.Println("probe failed:", err)
		os.Exit(1)
	}
}

func run() error {
	token, err := os.ReadFile(saDir + "token")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(saDir + "ca.crt")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %sca.crt", saDir)
	}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	req, err := http.NewRequest(http.MethodPost, "https://"+host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return err
	}
	fmt.Printf("reached %s as %s\n", host, review.Status.UserInfo.Username)
	return nil
}
