// Command mlxchat is a terminal chat client that runs a local LLM
// in-process; see cli for the commands and flags.
//
// The root folder holds only main.go, which wires the process (signals,
// standard streams, whether stdin is a terminal) to cli.Main. It may import
// cli, golang.org/x/term and the standard library; everything else lives in
// the packages below it.
package main
