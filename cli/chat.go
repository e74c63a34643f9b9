package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"mlxchat/engine"
	"mlxchat/models/hub"
	"mlxchat/themes"
	"mlxchat/ui"
)

// chatCmd opens the TUI on an engine that loads the model in the
// background (download progress and loading show in the TUI).
func chatCmd(ctx context.Context, c *config, model string, io_ IO) error {
	// A model that is neither on disk nor downloadable fails here, as one
	// line, before the screen is taken over.
	if res, _, err := hub.Locate(model, hub.Options{}); err != nil && (res.Repo == "" || !errors.Is(err, fs.ErrNotExist)) {
		return err
	}
	if c.theme != "" {
		if _, err := themes.Get(c.theme, false); err != nil {
			return usageErr(fmt.Errorf("--theme: %w", err))
		}
	}
	if !io_.StdinIsTerminal && !io_.ForceTUI {
		return usageErr(errors.New("the chat needs a terminal on stdin; use mlxchat run MODEL for scripts"))
	}
	be, err := openBackend(c, io_.Stderr)
	if err != nil {
		return usageErr(err)
	}
	defer be.close()
	var bundle *engine.Bundle // written on the engine goroutine, read after Close
	e := engine.NewLoading(func(ctx context.Context, progress func(stage string, done, total int64)) (*engine.Bundle, error) {
		d, err := resolveModel(ctx, model, hubClient(hubDialTimeout, hubHeaderTimeout), progress)
		if err != nil {
			return nil, err
		}
		progress("loading "+d, 0, 0)
		bundle, err = engine.LoadBundle(d, be.backend, model)
		if err != nil {
			return nil, err
		}
		if err := c.checkMaxKV(bundle.Info.ContextLength); err != nil {
			return nil, usageErr(err) // bundle is closed with the engine
		}
		return bundle, nil
	}, engine.Options{Settings: c.settings()})
	e.Start(ctx)
	defer func() {
		e.Close()
		if bundle != nil {
			bundle.Close()
		}
	}()
	err = ui.Run(ctx, ui.Options{
		Engine:      e,
		ModelName:   model,
		ModelDir:    localDir(model),
		Settings:    c.settings(),
		CountTokens: e.CountTokens,
		Theme:       c.theme,
		ConfigPath:  c.configPath,
		Input:       io_.Stdin,
		Output:      io_.Stdout,
		Report:      io_.Stderr,
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
