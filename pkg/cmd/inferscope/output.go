package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/inferscope/inferscope/pkg/engine"
)

// writeJSON prints v as indented JSON: with --json, the data source resource's answer.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printAnswer prints a command's answer as JSON (--json) or for people.
func printAnswer[T any](w io.Writer, asJSON bool, v T, forPeople func(io.Writer, T) error) error {
	if asJSON {
		return writeJSON(w, v)
	}
	return forPeople(w, v)
}

// workFailed is the command's error when its work failed: a wrong question (errOptions) is a
// usage error, anything else means Prometheus could not be read (exitUnavailable).
func workFailed(err, errOptions error) error {
	if errors.Is(err, errOptions) {
		return usagef("%v", err)
	}
	return exitStatus{exitUnavailable, err.Error()}
}

// forSubject narrows e to the question's subject (engine.ForSubject): a name Prometheus has no
// series of is a usage error naming its flag (flags by value, else "--" + the kind of name),
// a failure to list the names is Prometheus' failure.
func forSubject(ctx context.Context, e *engine.Engine, s engine.Subject, flags map[string]string) (*engine.Engine, error) {
	n, err := e.ForSubject(ctx, s)
	var ue *engine.UnknownError
	if errors.As(err, &ue) {
		flag := flags[ue.Name]
		if flag == "" {
			flag = "--" + strings.ToLower(ue.What)
		}
		return nil, usagef("%s: %v", flag, err)
	}
	if err != nil {
		return nil, exitStatus{exitUnavailable, err.Error()}
	}
	return n, nil
}
