// Package shell quotes words for a POSIX shell, so that every command the
// project prints for an operator can be pasted as it is.
package shell
