//go:build !unix

package tasks

const noFollow = 0
