package server

import "fmt"

const DefaultPort = 8080

type Server struct {
	Port int
}

func NewServer(port int) *Server {
	return &Server{Port: port}
}

func (s *Server) Start() error {
	fmt.Println(formatAddress(s.Port))
	return nil
}

func formatAddress(port int) string {
	return fmt.Sprintf(":%d", port)
}
