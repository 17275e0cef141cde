package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

var configFlag = &cli.StringFlag{
	Name:  "config",
	Usage: "mitrity-gateway.yaml (default: $MITRITY_GATEWAY_CONFIG, ~/.config/mitrity/mitrity-gateway.yaml for a user, /etc/mitrity/mitrity-gateway.yaml, else the embedded default; never the working directory)",
}

// loadConfig finds, loads and validates the config; on failure the error
// lists every problem, one per line, with file:line:column.
func loadConfig(c *cli.Context) (*config.Config, error) {
	path, embedded := config.Locate(c.String("config"))
	if wd, err := os.Getwd(); err == nil && c.String("config") == "" {
		if stray := config.StrayFile(wd); stray != "" && stray != path {
			// Once read from the working directory: say why it no longer is.
			fmt.Fprintf(c.App.ErrWriter, "mitrity-gateway: ignoring %s: a config is never read from the working directory, which the commands it runs can write; pass --config or move it to %s\n", stray, config.SystemPath)
		}
	}
	if embedded {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return config.LoadEmbedded(wd)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration, refusing to start:\n%w", err)
	}
	return cfg, nil
}

// flagFiles are the gateway's own files that flags name: no run may see
// them, and a token file (every agent's bearer token) configures the
// gateway as much as its config does.
func flagFiles(c *cli.Context) []ownfiles.File {
	var out []ownfiles.File
	if c.IsSet("token-file") {
		if p, err := filepath.Abs(c.String("token-file")); err == nil {
			out = append(out, ownfiles.File{Path: p, Role: ownfiles.Configures, Where: yamlfile.Loc{Path: "--token-file"}, What: "the agents' bearer tokens"})
		}
	}
	if d := c.String("admin-dir"); d != "" {
		if p, err := filepath.Abs(d); err == nil {
			out = append(out, ownfiles.File{Path: p, Role: ownfiles.Keeps, Where: yamlfile.Loc{Path: "--admin-dir"}, What: "the admin socket directory"})
		}
	}
	return out
}
