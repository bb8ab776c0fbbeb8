package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	// The types an Any in the operator's resources may hold: registering them
	// is what lets an Any be unmarshalled by its type URL.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

type validateRequest struct {
	TypeURL string `json:"type_url"`
	Value   []byte `json:"value"` // encoding/json reads base64 into []byte
}

type validateAnswer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func runValidate(in io.Reader, out io.Writer) error {
	o := newJSONOut(out)
	return lines(in, func(line []byte) error {
		var req validateRequest
		if err := json.Unmarshal(line, &req); err != nil {
			o.write(validateAnswer{Error: "not a {type_url, value} JSON line: " + err.Error()})
			return nil
		}
		if err := validateAny(&anypb.Any{TypeUrl: req.TypeURL, Value: req.Value}, "", 0); err != nil {
			o.write(validateAnswer{Error: err.Error()})
		} else {
			o.write(validateAnswer{OK: true})
		}
		return nil
	})
}

type validator interface{ ValidateAll() error }

// An Any inside an Any inside ... this deep is a loop or an attack, not config.
const maxAnyDepth = 16

// validateAny unmarshals an Any by its type URL, refuses bytes the type does
// not know, and checks the message's rules, then those of every Any in it:
// protoc-gen-validate stops at an Any (it checks at most its type URL).
func validateAny(a *anypb.Any, at string, depth int) error {
	if depth > maxAnyDepth {
		return fmt.Errorf("%s: Anys nested more than %d deep", where(at), maxAnyDepth)
	}
	name := strings.TrimPrefix(a.GetTypeUrl(), "type.googleapis.com/")
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl())
	if err != nil {
		return fmt.Errorf("%s: unknown type %q (not an Envoy type this validator knows)", where(at), a.GetTypeUrl())
	}
	msg := mt.New().Interface()
	if err := (proto.UnmarshalOptions{}).Unmarshal(a.GetValue(), msg); err != nil {
		return fmt.Errorf("%s: %s: not a valid encoding: %v", where(at), name, err)
	}
	if err := unknownFields(msg.ProtoReflect(), ""); err != nil {
		return fmt.Errorf("%s: %s: %v", where(at), name, err)
	}
	if v, ok := msg.(validator); ok {
		if err := v.ValidateAll(); err != nil {
			return fmt.Errorf("%s: %s: invalid: %v", where(at), name, err)
		}
	}
	var errs []error
	eachAny(msg.ProtoReflect(), at, func(inner *anypb.Any, path string) {
		if err := validateAny(inner, path, depth+1); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

func where(at string) string {
	if at == "" {
		return "resource"
	}
	return at
}

// unknownFields names the first field the type does not declare: bytes that a
// real client would silently drop (a typo, or a field of a newer Envoy).
func unknownFields(m protoreflect.Message, at string) error {
	if raw := m.GetUnknown(); len(raw) > 0 {
		num, _, _ := protowire.ConsumeTag(raw)
		in := ""
		if at != "" {
			in = " at " + at
		}
		return fmt.Errorf("unknown field number %d in %s%s (%d unknown bytes)", num, m.Descriptor().FullName(), in, len(raw))
	}
	var err error
	eachMessage(m, at, func(inner protoreflect.Message, path string) bool {
		if err == nil {
			err = unknownFields(inner, path)
		}
		return err == nil
	})
	return err
}

// eachMessage calls fn on every message directly held by m's set fields.
func eachMessage(m protoreflect.Message, at string, fn func(protoreflect.Message, string) bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := join(at, string(fd.Name()))
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if !fn(l.Get(i).Message(), fmt.Sprintf("%s[%d]", path, i)) {
					return false
				}
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			ok := true
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				ok = fn(mv.Message(), fmt.Sprintf("%s[%v]", path, k.Interface()))
				return ok
			})
			return ok
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			return fn(v.Message(), path)
		}
		return true
	})
}

// eachAny finds every Any below m (not inside those Anys: validateAny descends into them).
func eachAny(m protoreflect.Message, at string, fn func(*anypb.Any, string)) {
	eachMessage(m, at, func(inner protoreflect.Message, path string) bool {
		if a, ok := inner.Interface().(*anypb.Any); ok {
			fn(a, path)
		} else {
			eachAny(inner, path, fn)
		}
		return true
	})
}

func join(at, field string) string {
	if at == "" {
		return field
	}
	return at + "." + field
}
