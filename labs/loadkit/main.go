package loadkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs one load program and returns its exit status: parse reads the command
// line (an error is one line on stderr and exit 2; -h prints the flags and exits 0),
// then run drives the load with a context that ends on SIGINT or SIGTERM. An error
// from run is one line on stderr and exit 1.
func Main[C any](
	args []string,
	stdout, stderr io.Writer,
	parse func(args []string, stderr io.Writer) (C, error),
	run func(ctx context.Context, cfg C, stdout, stderr io.Writer) error,
) int {
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	return 0
}
