// Package partitionbench is 'graphmill bench partition': the partitioner against gpmetis on the
// shared graphs and a synthetic one, alternating runs (harness in partition/partbench).
package partitionbench
