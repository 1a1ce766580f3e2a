// Package samplebench is 'graphmill bench sample': neighbour sampling, feature gathering and the
// loader against the machine's memory ceilings (harness in pipeline/loadbench).
package samplebench
