// Package jsonnull writes JSON in which floating-point values that JSON
// cannot hold (NaN, ±Inf) are null, where encoding/json refuses the whole
// value ("json: unsupported value: NaN"). A diverged run's losses, or a
// metric over an empty split, are such values, and the rest of the record
// is still worth writing.
//
// Written here because encoding/json has no option for it and a
// dependency for a 60-line walk is not worth it.
package jsonnull

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"
)

// MarshalIndent is json.MarshalIndent with NaN and ±Inf floats as null.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	return json.MarshalIndent(tree(reflect.ValueOf(v)), prefix, indent)
}

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// tree is v as encoding/json would see it (field names and omitempty
// from the json tags, embedded structs' fields promoted), with every
// non-finite float replaced by nil. Values that marshal themselves are
// left to do so.
func tree(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if t := v.Type(); t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && (t.Implements(marshaler) || t.Implements(textMarshaler)) {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return v.Interface()
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return tree(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface() // base64, as encoding/json
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = tree(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			k, err := json.Marshal(it.Key().Interface()) // string keys as encoding/json writes them
			if err != nil {
				return v.Interface() // let encoding/json report it
			}
			key := string(k)
			if len(key) > 1 && key[0] == '"' {
				json.Unmarshal(k, &key)
			}
			out[key] = tree(it.Value())
		}
		return out
	case reflect.Struct:
		var out object
		fields(v, &out)
		return out
	}
	return v.Interface()
}

// object is a struct's fields in their order, as encoding/json writes
// them.
type object []member

type member struct {
	name  string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(m.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// empty is omitempty's test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

// fields adds struct v's encoded fields to out.
func fields(v reflect.Value, out *object) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				fields(fv, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(","+opts+",", ",omitempty,") && empty(fv) {
			continue
		}
		*out = append(*out, member{name, tree(fv)})
	}
}
