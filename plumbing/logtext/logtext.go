package logtext

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"go.temporal.io/sdk/temporal"
)

// Text is an attribute value that may hold payload text: logged whole with
// the codec off, as its size with it on.
type Text string

// LogValue is the text itself, for handlers that Hide does not wrap.
func (t Text) LogValue() slog.Value { return slog.StringValue(string(t)) }

// sdkText are the Temporal sdk's attribute keys whose string values may
// hold payload text (a panic's value, an activity's or query's result).
var sdkText = []string{"PanicError", "Result"}

// For returns logger with payload text hidden when hide (the codec is on),
// logger itself otherwise.
func For(logger *slog.Logger, hide bool) *slog.Logger {
	if !hide || logger == nil {
		return logger
	}
	return slog.New(Hide(logger.Handler()))
}

// Hide wraps h so that no Text value, error value or sdk text attribute
// reaches it whole: each becomes its size (and an error also its type).
func Hide(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{h: h}
}

type handler struct{ h slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hide(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	hidden := make([]slog.Attr, len(as))
	for i, a := range as {
		hidden[i] = hide(a)
	}
	return &handler{h: h.h.WithAttrs(hidden)}
}

func (h *handler) WithGroup(name string) slog.Handler { return &handler{h: h.h.WithGroup(name)} }

// hide is a with its payload text replaced by its size.
func hide(a slog.Attr) slog.Attr {
	v := a.Value
	if v.Kind() == slog.KindLogValuer {
		if t, ok := v.LogValuer().(Text); ok {
			return size(a.Key, len(t))
		}
		v = v.Resolve()
	}
	switch v.Kind() {
	case slog.KindString:
		if slices.Contains(sdkText, a.Key) {
			return size(a.Key, len(v.String()))
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Group(a.Key, slog.String("type", errType(err)), slog.Int("bytes", len(err.Error())))
		}
		if slices.Contains(sdkText, a.Key) {
			return size(a.Key, len(fmt.Sprint(v.Any())))
		}
	case slog.KindGroup:
		as := v.Group()
		hidden := make([]any, len(as))
		for i, g := range as {
			hidden[i] = hide(g)
		}
		return slog.Group(a.Key, hidden...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func size(key string, n int) slog.Attr { return slog.Group(key, slog.Int("bytes", n)) }

// errType names err's kind without its text: the type string of a Temporal
// application error (e.g. Indeterminate), else err's Go type.
func errType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return app.Type()
	}
	return fmt.Sprintf("%T", err)
}
