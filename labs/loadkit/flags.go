package loadkit

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// Flags is a load program's command line: the standard flag package, with errors
// returned as one line (never the usage text), -h printing the flags to stderr, and
// the kit's own flags (-url, the pace) checked once parsing is done.
type Flags struct {
	*flag.FlagSet
	stderr io.Writer
	checks []func() error
}

// NewFlags makes an empty command line; -h prints to stderr.
func NewFlags(stderr io.Writer) *Flags {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{FlagSet: fs, stderr: stderr}
}

// Parse parses args, refuses positional arguments and runs the kit's checks in the
// order their flags were defined. It returns flag.ErrHelp after printing the flags
// for -h.
func (f *Flags) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.SetOutput(f.stderr)
			f.PrintDefaults()
		}
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.Arg(0))
	}
	for _, check := range f.checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// URL defines -url, the service's base URL: http on a loopback host (a load program
// must never be pointed at another machine), with no query or fragment. After Parse,
// *p holds it without a trailing slash, a path kept ("http://127.0.0.1:8080/svc").
func (f *Flags) URL(p *string, def string) {
	f.StringVar(p, "url", def, "base URL of the service (loopback only)")
	f.checks = append(f.checks, func() (err error) {
		*p, err = loopbackURL(*p)
		return err
	})
}

func loopbackURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("-url %q: %v", base, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("-url %q: scheme must be http", base)
	}
	if host := u.Hostname(); host != "localhost" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("-url %q: refusing a non-loopback host", base)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("-url %q: must not have a query or fragment", base)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Limits cap the pace flags, so that a mistyped flag cannot turn a load program into
// something that takes the machine down. A zero Requests or Concurrency leaves that
// flag out: the lab bounds the count another way, or has no in-flight cap.
type Limits struct {
	Rate        float64
	Duration    time.Duration
	Requests    int64
	Concurrency int
}

// Pace defines -rate and -duration, and -max-requests and -concurrency when lim has
// them; p's fields on entry are the defaults. `what` names what is started, for -h
// ("requests", "clients"). A -max-requests of 0, its default, means rate*duration,
// at least 1 and at most lim.Requests.
func (f *Flags) Pace(p *Pace, what string, lim Limits) {
	f.Float64Var(&p.Rate, "rate", p.Rate, fmt.Sprintf("%s started per second (open loop), at most %g", what, lim.Rate))
	f.DurationVar(&p.Duration, "duration", p.Duration, fmt.Sprintf("how long to send, at most %v", lim.Duration))
	if lim.Requests > 0 {
		f.Int64Var(&p.Max, "max-requests", 0, fmt.Sprintf("stop after this many %s (default rate*duration, at most %d)", what, lim.Requests))
	}
	if lim.Concurrency > 0 {
		f.IntVar(&p.Concurrency, "concurrency", p.Concurrency,
			fmt.Sprintf("most %s in flight; one due when the cap is hit is skipped, at most %d", what, lim.Concurrency))
	}
	f.checks = append(f.checks, func() error {
		if p.Rate <= 0 || p.Rate > lim.Rate {
			return fmt.Errorf("-rate %v: must be above 0 and at most %v", p.Rate, lim.Rate)
		}
		if err := Positive("-duration", p.Duration, lim.Duration); err != nil {
			return err
		}
		if lim.Concurrency > 0 {
			if err := Within("-concurrency", p.Concurrency, 1, lim.Concurrency); err != nil {
				return err
			}
		}
		if lim.Requests > 0 {
			if err := Within("-max-requests", p.Max, 0, lim.Requests); err != nil {
				return err
			}
			if p.Max == 0 {
				p.Max = min(max(int64(p.Rate*p.Duration.Seconds()), 1), lim.Requests)
			}
		}
		return nil
	})
}

// Within says why v is outside [lo, hi], naming the flag; nil when it is inside.
func Within[T cmp.Ordered](name string, v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %v: must be between %v and %v", name, v, lo, hi)
	}
	return nil
}

// Positive says why d is not in (0, most], naming the flag; nil when it is.
func Positive(name string, d, most time.Duration) error {
	if d <= 0 || d > most {
		return fmt.Errorf("%s %v: must be positive and at most %v", name, d, most)
	}
	return nil
}
