package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// runWebhook serves an admission.Webhook that allows every review at
// /validate, through controller-runtime's own webhook server: the server a
// manager returns from GetWebhookServer() and starts as a runnable, with its
// certificate watcher and per-path metrics. Like kubebuilder's scaffold it
// offers HTTP/1.1 only (no HTTP/2). It prints "listening" on stdout once the
// server accepts TLS connections, and stops on SIGTERM or SIGINT.
func runWebhook(args []string) error {
	flags := flag.NewFlagSet("webhook", flag.ContinueOnError)
	certDir := flags.String("cert-dir", "", "directory with tls.crt and tls.key")
	host := flags.String("host", "127.0.0.1", "address to listen on")
	port := flags.Int("port", 9443, "port to listen on")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *certDir == "" {
		return errors.New("-cert-dir is required")
	}
	// Info level, JSON on stderr: controller-runtime's production default.
	log.SetLogger(zap.New())

	server := webhook.NewServer(webhook.Options{
		Host:    *host,
		Port:    *port,
		CertDir: *certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
		}},
	})
	server.Register("/validate", &admission.Webhook{
		Handler: admission.HandlerFunc(
			func(context.Context, admission.Request) admission.Response {
				return admission.Allowed("")
			},
		),
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- server.Start(ctx) }()

	started := server.StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for started(nil) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving on %s:%d after 30 s", *host, *port)
		}
		select {
		case err := <-served:
			return fmt.Errorf("server stopped before serving: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	fmt.Println("listening")
	return <-served
}
