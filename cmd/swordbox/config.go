package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// loadConfig fills out (a pointer to a typed config struct whose fields carry
// `mapstructure:"<flag-name>"` tags) for the command cmd. Sources, in rising
// precedence: the struct's current values (defaults), the section of the
// --config YAML file, SWORDBOX_<SECTION>_<KEY> environment variables, and the
// flags the user set. Unknown keys in the file's section are an error, so a
// typo never passes silently.
func loadConfig(cmd *cobra.Command, section string, out any) error {
	v := viper.New()
	v.SetEnvPrefix("SWORDBOX_" + strings.ToUpper(strings.ReplaceAll(section, "-", "_")))
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()

	// Defaults: the flags' default values.
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		v.SetDefault(f.Name, flagValue(f))
	})

	if path, _ := cmd.Flags().GetString("config"); path != "" {
		fv := viper.New()
		fv.SetConfigFile(path)
		if err := fv.ReadInConfig(); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		sec := fv.Sub(section)
		if sec != nil {
			for _, k := range sec.AllKeys() {
				top := strings.SplitN(k, ".", 2)[0]
				if cmd.Flags().Lookup(top) == nil && !hasField(out, top) {
					return fmt.Errorf("config %s: %s.%s: unknown setting", path, section, k)
				}
				v.Set(k, sec.Get(k))
			}
		}
	}
	// Environment beats the file; flags the user set beat everything.
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		envKey := "SWORDBOX_" + strings.ToUpper(strings.ReplaceAll(section+"_"+f.Name, "-", "_"))
		if val, ok := os.LookupEnv(envKey); ok {
			v.Set(f.Name, val)
		}
		if f.Changed {
			v.Set(f.Name, flagValue(f))
		}
	})

	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		ErrorUnused:      false,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(v.AllSettings()); err != nil {
		return fmt.Errorf("%s config: %w", section, err)
	}
	return nil
}

// hasField reports whether the struct pointed to by out has a field tagged
// `mapstructure:"name"` (settings that exist only in the file, not as flags).
func hasField(out any, name string) bool {
	var m map[string]any
	if err := mapstructure.Decode(out, &m); err != nil {
		return false
	}
	_, ok := m[name]
	return ok
}

// flagValue is a flag's value for viper: slices as slices (their String()
// form, "[a,b]", would otherwise arrive as one element).
func flagValue(f *pflag.Flag) any {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return f.Value.String()
}
