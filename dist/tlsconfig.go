package dist

import "crypto/tls"

// TLSConfig returns the server or client side of the mutual TLS that
// s.TLS names (certificates checked against its CA, not against a host
// name), for transports other than Comm's (the sampler services' gRPC).
func (s *Security) TLSConfig(server bool) (*tls.Config, error) { return s.tlsConfig(server) }
