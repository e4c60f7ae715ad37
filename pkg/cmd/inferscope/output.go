package main

import (
	"encoding/json"
	"errors"
	"io"
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
