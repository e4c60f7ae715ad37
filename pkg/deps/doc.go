// Package deps holds no code: its test checks what the shipped binaries link.
package deps
