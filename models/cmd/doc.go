// Package cmd holds the command-line tools of the models packages (see
// mkmodel). It contains no code of its own.
package cmd
