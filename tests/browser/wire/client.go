// A Go net/http client posting a recorded collect body, as a scraper written in Go would:
// client URL BODYFILE USER_AGENT ORIGIN. The test serves a self-signed certificate.
package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: client URL BODYFILE USER_AGENT ORIGIN")
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: true,
	}}
	req, _ := http.NewRequest("POST", os.Args[1], bytes.NewReader(body))
	req.Header.Set("User-Agent", os.Args[3])
	req.Header.Set("Origin", os.Args[4])
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	res, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, _ := io.ReadAll(res.Body)
	fmt.Printf("%d %s\n", res.StatusCode, out)
}
